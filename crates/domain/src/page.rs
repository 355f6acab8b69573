//! Cursor pagination as the store ports take and answer it (newest first).

/// The longest cursor a list takes (`startingAfter`), in characters.
pub const MAX_CURSOR_CHARS: usize = 128;
/// The most items a page holds.
pub const MAX_PAGE_LIMIT: u32 = 100;
/// The items of a page when no limit is asked for.
pub const DEFAULT_PAGE_LIMIT: u32 = 25;

/// A page request of a cursor-paginated list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// 1-100.
    pub limit: u32,
    /// The id of the last item of the previous page.
    pub starting_after: Option<String>,
}

/// One page of a list; `has_more` tells whether items follow the last one.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The page's items, in the list's order.
    pub items: Vec<T>,
    /// Whether more items follow the last one (ask again with it as the cursor).
    pub has_more: bool,
}
