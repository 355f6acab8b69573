//! What an email says: its subject and its plain-text and HTML parts (every merchant- or
//! customer-supplied value escaped in the HTML part).

use crate::email::model::EmailKind;
use crate::invoice::model::Invoice;

/// Subject, plain text and HTML of an email of `kind` about `invoice` from `merchant`, with
/// the hosted invoice link.
pub fn compose(
    kind: EmailKind,
    invoice: &Invoice,
    merchant: &str,
    hosted_url: Option<&str>,
) -> (String, String, String) {
    let number = invoice.number.as_deref().unwrap_or("");
    let token = invoice.fields.currency.symbol();
    let total = format!("{} {token}", invoice.totals.total.to_trimmed(2));
    let remaining = format!("{} {token}", invoice.remaining().to_trimmed(2));
    let due = invoice.fields.content.due_at.map(|d| d.format("%-d %b %Y").to_string());
    let name = invoice.fields.content.customer.as_ref().and_then(|c| c.name.clone());
    let greeting = name.map_or_else(|| "Hello,".to_owned(), |n| format!("Hello {n},"));
    let subject = match kind {
        EmailKind::Invoice => format!("Invoice {number} from {merchant}"),
        EmailKind::Reminder => match &due {
            Some(d) => format!("Reminder: invoice {number} from {merchant}, due {d}"),
            None => format!("Reminder: invoice {number} from {merchant}"),
        },
    };
    let mut lines = vec![greeting.clone(), String::new()];
    match kind {
        EmailKind::Invoice => lines.push(format!("{merchant} sent you invoice {number} for {total}.")),
        EmailKind::Reminder => {
            lines.push(format!("This is a reminder that invoice {number} from {merchant} has {remaining} left to pay."))
        }
    }
    if let Some(d) = &due {
        lines.push(format!("Due date: {d}."));
    }
    lines.push(format!("Amount due: {remaining}, payable in {token} on Polygon."));
    if let Some(url) = hosted_url {
        lines.push(String::new());
        lines.push(format!("View and pay the invoice: {url}"));
    }
    if kind == EmailKind::Invoice {
        lines.push(String::new());
        lines.push(format!("The invoice is attached as {number}.pdf."));
    }
    lines.push(String::new());
    lines.push(format!("— {merchant}"));
    let text = lines.join("\n");

    let mut html =
        String::from("<!doctype html><html lang=\"en\"><body style=\"font-family:sans-serif;color:#15171a\">");
    for line in &lines {
        if line.is_empty() {
            continue;
        }
        match hosted_url {
            Some(url) if line.ends_with(url) => html.push_str(&format!(
                "<p><a href=\"{}\" style=\"color:#1d4ed8\">View and pay the invoice</a></p>",
                escape(url)
            )),
            _ => html.push_str(&format!("<p>{}</p>", escape(line))),
        }
    }
    html.push_str("</body></html>");
    (subject, text, html)
}

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(escape("<b>\"A&B\"</b>"), "&lt;b&gt;&quot;A&amp;B&quot;&lt;/b&gt;");
    }
}
