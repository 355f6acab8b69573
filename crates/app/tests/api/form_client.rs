//! A browser without JavaScript for the dashboard's page tests: no redirect followed, the
//! session cookie sent by hand, forms posted URL-encoded from the service's own origin.

use crate::support::TestApp;

/// A browser: no redirect followed, the cookie sent by hand, forms posted from the service's
/// own origin.
pub struct Browser {
    pub http: reqwest::Client,
    pub base: String,
    pub cookie: Option<String>,
}

pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub set_cookie: Option<String>,
    pub html: String,
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { http, base: app.base.clone(), cookie: None }
    }

    pub async fn answer(&mut self, req: reqwest::RequestBuilder) -> Page {
        let req = match &self.cookie {
            Some(c) => req.header("Cookie", format!("stablepay_session={c}")),
            None => req,
        };
        let res = req.send().await.unwrap();
        let header = |n: &str| res.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
        let (status, location, set_cookie) = (res.status().as_u16(), header("location"), header("set-cookie"));
        if let Some(c) = &set_cookie {
            let value = c.split(';').next().unwrap().trim_start_matches("stablepay_session=").to_owned();
            self.cookie = Some(value).filter(|v| !v.is_empty());
        }
        Page { status, location, set_cookie, html: res.text().await.unwrap() }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let req = self.http.get(format!("{}{path}", self.base));
        self.answer(req).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("Origin", &self.base)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(encoded(form));
        self.answer(req).await
    }
}

/// A form's body, URL-encoded.
pub fn encoded(form: &[(&str, &str)]) -> String {
    let enc = |t: &str| -> String {
        t.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    form.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

/// The value of the hidden field `name` in a page.
pub fn hidden(html: &str, name: &str) -> String {
    let at = html.find(&format!("name=\"{name}\" value=\"")).unwrap_or_else(|| panic!("no {name} in {html}"));
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_owned()
}
