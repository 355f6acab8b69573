//! What an email says: its subject and its plain-text and HTML parts. Both parts say the same:
//! the merchant, what the invoice is for (its lines or its reference), the totals, the amount
//! due stated once and a link to the hosted invoice; a paid invoice's email is a receipt (what
//! was paid, with each payment's transaction hash). Every merchant- or customer-supplied value
//! is kept on one line in the text part and escaped in the HTML part.

use crate::email::model::{EmailKind, EmailMessage, OutboundEmail};
use crate::invoice::model::Invoice;
use crate::invoice::payment::Payment;
use crate::merchant::logo::Logo;
use crate::merchant::model::MerchantProfile;
use crate::money::{Amount, NumberStyle};

/// The seller, as an email names it.
#[derive(Clone, Copy, Debug)]
pub struct Seller<'a> {
    /// The merchant's name (the sender's display name).
    pub name: &'a str,
    /// The seller block of its documents.
    pub profile: &'a MerchantProfile,
    /// Its logo, shown inline at the top of the HTML part.
    pub logo: Option<&'a Logo>,
}

/// An email's subject, plain text and HTML.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Composed {
    /// The subject line.
    pub subject: String,
    /// The plain-text part.
    pub text: String,
    /// The HTML part: a complete document, inline styles only, no script, no remote resource.
    pub html: String,
}

impl Composed {
    /// The message of `email` from the service itself (its name as the sender, no reply-to, no
    /// attachment, no logo): a statement's, an account link's, a notice's.
    pub fn from_service(self, email: &OutboundEmail) -> EmailMessage {
        EmailMessage {
            id: email.id.clone(),
            from_name: "stablepay".into(),
            to: email.to.clone(),
            reply_to: None,
            subject: self.subject,
            text: self.text,
            html: self.html,
            attachment: None,
            logo: None,
        }
    }
}

/// One row of the summary: a label and an amount.
struct Row {
    label: String,
    amount: String,
    strong: bool,
}

/// The email of `kind` about `invoice` from `seller`, with its credited `payments` and the
/// hosted invoice link. An invoice that is paid is sent as a receipt.
pub fn compose(
    kind: EmailKind,
    invoice: &Invoice,
    payments: &[Payment],
    seller: Seller<'_>,
    hosted_url: Option<&str>,
) -> Composed {
    let merchant = one_line(seller.name);
    // Where the merchant's and the customer's names meet other text, they are isolated: a
    // right-to-left name (or one carrying direction controls) cannot reorder the sentence.
    let named = crate::text::isolated(&merchant);
    let number = invoice.number.as_deref().unwrap_or("");
    let token = invoice.fields.currency.symbol();
    let money = |a: &Amount| format!("{} {token}", a.readable(2, NumberStyle::English));
    let receipt = invoice.remaining().is_zero() && !invoice.customer_amount_paid.is_zero();
    let due = invoice.fields.content.due_at.map(|d| d.format("%-d %b %Y").to_string());
    let subject = match (kind, receipt, &due) {
        (_, true, _) => format!("Receipt for invoice {number} from {merchant}"),
        (EmailKind::Reminder, false, Some(d)) => format!("Reminder: invoice {number} from {merchant}, due {d}"),
        (EmailKind::Reminder, false, None) => format!("Reminder: invoice {number} from {merchant}"),
        // An invoice's own email (the other kinds are never about an invoice).
        (_, false, _) => format!("Invoice {number} from {merchant}"),
    };
    let customer = invoice.fields.content.customer.as_ref().and_then(|c| c.name.as_deref()).map(one_line);
    let greeting = customer.map_or_else(|| "Hello,".to_owned(), |n| format!("Hello {},", crate::text::isolated(&n)));
    let intro = match (kind, receipt) {
        (_, true) => format!(
            "Thank you for your payment. {named} received {} for invoice {number}.",
            money(&invoice.customer_amount_paid)
        ),
        (EmailKind::Reminder, false) => {
            format!("This is a reminder that invoice {number} from {named} is not paid yet.")
        }
        (_, false) => {
            format!("{named} sent you invoice {number} for {}.", money(&invoice.totals.total))
        }
    };
    let rows = summary(invoice, &money, receipt);
    let paid: Vec<String> = payments
        .iter()
        .filter(|p| p.status.is_credited())
        .map(|p| {
            format!("{} on Polygon, transaction {}", money(&p.customer_amount_credited), p.transaction_hash.as_str())
        })
        .collect();
    let footer = seller_lines(seller);
    let attached = (kind == EmailKind::Invoice)
        .then(|| format!("The {} is attached as {number}.pdf.", if receipt { "receipt" } else { "invoice" }));
    let action = if receipt { "View the receipt" } else { "View and pay the invoice" };

    let mut text = vec![greeting.clone(), String::new(), intro.clone(), String::new()];
    text.extend(rows.iter().map(|r| format!("{}: {}", r.label, r.amount)));
    if !receipt && let Some(d) = &due {
        text.push(format!("Due date: {d}"));
    }
    if !paid.is_empty() {
        text.push(String::new());
        text.push("Payments:".into());
        text.extend(paid.iter().map(|p| format!("- {p}")));
    }
    if let Some(url) = hosted_url {
        text.push(String::new());
        text.push(format!("{action}: {url}"));
    }
    if let Some(a) = &attached {
        text.push(String::new());
        text.push(a.clone());
    }
    text.push(String::new());
    text.push(format!("— {merchant}"));
    text.extend(footer.iter().cloned());

    let heading = Heading { title: &subject, merchant: &merchant, logo: seller.logo };
    let html = html_part(heading, (&greeting, &intro), (&rows, &paid), (hosted_url, action), (&attached, &footer));
    Composed { subject, text: text.join("\n"), html }
}

/// The lines (or what the invoice is for), the totals and the amount due (or what was paid).
fn summary(invoice: &Invoice, money: &dyn Fn(&Amount) -> String, receipt: bool) -> Vec<Row> {
    let c = &invoice.fields.content;
    let row = |label: String, amount: String, strong: bool| Row { label: one_line(&label), amount, strong };
    let mut rows: Vec<Row> = c
        .lines
        .iter()
        .map(|l| {
            let label = if l.quantity == Amount::one() {
                l.description.clone()
            } else {
                format!("{} × {}", l.quantity.to_trimmed(0), l.description)
            };
            row(label, money(&l.amount()), false)
        })
        .collect();
    if rows.is_empty() {
        let what = c.external_reference.clone().unwrap_or_else(|| "Payment".to_owned());
        rows.push(row(what, money(&invoice.totals.total), false));
    } else {
        if !invoice.totals.discount.is_zero() {
            rows.push(row("Discount".into(), format!("−{}", money(&invoice.totals.discount)), false));
        }
        for t in &c.taxes {
            rows.push(row(t.label.clone(), money(&t.amount), false));
        }
        rows.push(row("Total".into(), money(&invoice.totals.total), true));
    }
    if receipt {
        rows.push(row("Paid".into(), money(&invoice.customer_amount_paid), true));
    } else {
        if !invoice.customer_amount_paid.is_zero() {
            rows.push(row("Paid".into(), money(&invoice.customer_amount_paid), false));
        }
        rows.push(row("Amount due".into(), money(&invoice.remaining()), true));
    }
    rows
}

/// The seller block: legal name, postal address, tax id and support email, as set.
fn seller_lines(seller: Seller<'_>) -> Vec<String> {
    let p = seller.profile;
    let mut lines = Vec::new();
    if let Some(l) = &p.legal_name {
        lines.push(one_line(l));
    }
    if let Some(a) = &p.postal_address {
        lines.extend(a.lines().map(one_line));
    }
    if let Some(t) = &p.tax_id {
        lines.push(format!("Tax ID: {}", one_line(t)));
    }
    if let Some(e) = &p.support_email {
        lines.push(format!("Support: {}", one_line(e)));
    }
    lines
}

/// The top of the HTML part: its title, and the merchant's logo and name.
struct Heading<'a> {
    title: &'a str,
    merchant: &'a str,
    logo: Option<&'a Logo>,
}

/// The merchant's logo, inline (at most 200 x 48 pixels), or nothing.
fn logo_img(heading: &Heading<'_>) -> String {
    heading.logo.map_or_else(String::new, |logo| {
        let (w, h) = logo.fit(200, 48);
        format!(
            "<img src=\"cid:{}\" alt=\"{}\" width=\"{w}\" height=\"{h}\" style=\"display:block;border:0;margin:0 0 8px;max-width:100%;height:auto\">",
            escape(&logo.content_id()),
            escape(heading.merchant)
        )
    })
}

fn html_part(
    heading: Heading<'_>,
    (greeting, intro): (&str, &str),
    (rows, paid): (&[Row], &[String]),
    (url, action): (Option<&str>, &str),
    (attached, footer): (&Option<String>, &[String]),
) -> String {
    let merchant = heading.merchant;
    let mut h = html_open(&heading, greeting, intro);
    h.push_str("<table role=\"presentation\" style=\"width:100%;border-collapse:collapse\">");
    for r in rows {
        let weight = if r.strong { "bold" } else { "normal" };
        h.push_str(&format!(
            "<tr><td style=\"padding:6px 0;border-top:1px solid #e5e7eb;font-weight:{weight};word-break:break-word\">{}</td>\
             <td style=\"padding:6px 0 6px 12px;border-top:1px solid #e5e7eb;text-align:right;white-space:nowrap;font-weight:{weight}\">{}</td></tr>",
            escape(&r.label),
            escape(&r.amount)
        ));
    }
    h.push_str("</table>");
    if !paid.is_empty() {
        h.push_str("<p style=\"margin:16px 0 4px;font-weight:bold\">Payments</p>");
        for p in paid {
            h.push_str(&format!("<p style=\"margin:0 0 4px;font-size:13px;word-break:break-all\">{}</p>", escape(p)));
        }
    }
    if let Some(url) = url {
        h.push_str(&format!(
            "<p style=\"margin:20px 0 4px\"><a href=\"{}\" style=\"display:inline-block;background:#1d4ed8;color:#ffffff;text-decoration:none;padding:10px 18px;border-radius:6px;font-weight:bold\">{}</a></p>",
            escape(url),
            escape(action)
        ));
    }
    if let Some(a) = attached {
        h.push_str(&format!("<p style=\"margin:12px 0 0;color:#4b5563;font-size:13px\">{}</p>", escape(a)));
    }
    html_close(&mut h, merchant, footer);
    h
}

/// The start of an HTML part: the document's head, the heading (logo and merchant), and the
/// card with the greeting and the introduction.
fn html_open(heading: &Heading<'_>, greeting: &str, intro: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title></head>\
         <body style=\"margin:0;padding:0;background:#f4f5f7\">\
         <div style=\"max-width:560px;margin:0 auto;padding:24px 16px;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#15171a;font-size:15px;line-height:1.5\">\
         {}<p style=\"font-size:18px;font-weight:bold;margin:0 0 16px\">{}</p>\
         <div style=\"background:#ffffff;border-radius:8px;padding:20px\">\
         <p style=\"margin:0 0 12px\">{}</p><p style=\"margin:0 0 16px\">{}</p>",
        escape(heading.title),
        logo_img(heading),
        escape(heading.merchant),
        escape(greeting),
        escape(intro)
    )
}

/// The end of an HTML part: the card closed, then the signature and its lines.
fn html_close(h: &mut String, signature: &str, footer: &[String]) {
    h.push_str("</div>");
    h.push_str(&format!("<p style=\"margin:16px 0 0;color:#4b5563;font-size:13px\">{}", escape(signature)));
    for line in footer {
        h.push_str(&format!("<br>{}", escape(line)));
    }
    h.push_str("</p></div></body></html>");
}

/// The email of a monthly statement of `merchant` (in `mode`) for `month` (its name, such as
/// `November 2026`): one download link per file, how long they work, and that a link is the
/// key to its file.
pub fn compose_statement(merchant: &str, mode: &str, month: &str, links: &[(&str, String)], days: u32) -> Composed {
    let merchant = one_line(merchant);
    let subject = format!("Statement for {month}: {merchant}");
    let greeting = "Hello,".to_owned();
    let test = if mode == "test" { " (test mode)" } else { "" };
    let intro = format!(
        "The {month} statement of {merchant}{test} is ready: every invoice created and every payment detected in the month (UTC), as CSV files."
    );
    let note = format!(
        "The links work for {days} days. Anyone who has a link can download its file: forward it only to people who may see these figures."
    );
    let mut text = vec![greeting.clone(), String::new(), intro.clone(), String::new()];
    text.extend(links.iter().map(|(label, url)| format!("{label}: {url}")));
    text.extend([String::new(), note.clone(), String::new(), "— stablepay".to_owned()]);
    let heading = Heading { title: &subject, merchant: &merchant, logo: None };
    let mut h = html_open(&heading, &greeting, &intro);
    for (label, url) in links {
        h.push_str(&format!(
            "<p style=\"margin:0 0 10px\"><a href=\"{}\" style=\"display:inline-block;background:#1d4ed8;color:#ffffff;text-decoration:none;padding:10px 18px;border-radius:6px;font-weight:bold\">Download {}</a></p>",
            escape(url),
            escape(label)
        ));
    }
    h.push_str(&format!("<p style=\"margin:12px 0 0;color:#4b5563;font-size:13px\">{}</p>", escape(&note)));
    html_close(&mut h, "stablepay", &[]);
    Composed { subject, text: text.join("\n"), html: h }
}

/// A notice from the service itself (not from a merchant): one button and a note.
#[derive(Clone, Copy, Debug)]
pub struct Notice<'a> {
    /// The subject line.
    pub subject: &'a str,
    /// What happened and why the email came.
    pub intro: &'a str,
    /// The button's words.
    pub button: &'a str,
    /// Where the button leads.
    pub url: &'a str,
    /// The small print under the button.
    pub note: &'a str,
}

/// The email of a notice: a greeting, why it came, one button (its link also written out in
/// the text part) and the note.
pub fn compose_notice(n: &Notice<'_>) -> Composed {
    let greeting = "Hello,";
    let text =
        [greeting, "", n.intro, "", &format!("{}: {}", n.button, n.url), "", n.note, "", "— stablepay"].join("\n");
    let heading = Heading { title: n.subject, merchant: "stablepay", logo: None };
    let mut h = html_open(&heading, greeting, n.intro);
    h.push_str(&format!(
        "<p style=\"margin:0 0 10px\"><a href=\"{}\" style=\"display:inline-block;background:#1d4ed8;color:#ffffff;text-decoration:none;padding:10px 18px;border-radius:6px;font-weight:bold\">{}</a></p>",
        escape(n.url),
        escape(n.button)
    ));
    h.push_str(&format!("<p style=\"margin:12px 0 0;color:#4b5563;font-size:13px\">{}</p>", escape(n.note)));
    html_close(&mut h, "stablepay", &[]);
    Composed { subject: n.subject.to_owned(), text, html: h }
}

/// `text` on one line: every control character (a line break, a tab) becomes a space.
pub fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
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
    fn html_is_escaped_and_names_stay_on_one_line() {
        assert_eq!(escape("<b>\"A&B\"</b>"), "&lt;b&gt;&quot;A&amp;B&quot;&lt;/b&gt;");
        assert_eq!(one_line("Evil\r\nBcc: x@y.z\tco"), "Evil  Bcc: x@y.z co");
    }
}
