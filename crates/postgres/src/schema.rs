//! Table definitions (kept by hand, in step with `migrations/`).

diesel::table! {
    merchants (id) {
        id -> Text,
        name -> Text,
        website_origin -> Nullable<Text>,
        status -> Text,
        live_wallet -> Nullable<Text>,
        live_token -> Nullable<Text>,
        live_activated_at -> Nullable<Timestamptz>,
        fee_basis_points -> Int4,
        invoice_prefix -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        key_type -> Text,
        digest -> Bytea,
        display_prefix -> Text,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    test_clocks (merchant_id) {
        merchant_id -> Text,
        offset_seconds -> Int8,
    }
}

diesel::table! {
    events (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        #[sql_name = "type"]
        event_type -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(api_keys -> merchants (merchant_id));
diesel::allow_tables_to_appear_in_same_query!(merchants, api_keys, test_clocks, events);
