//! The body of a delivery: the event envelope, exactly as `GET /v1/events/{id}` shows it in
//! `data` of its answer (`{id, object: "event", type, mode, createdAt, data}`), compact JSON.

use serde_json::{Map, Value};
use stablepay_domain::event::{Event, EventData};

fn json(data: &EventData) -> Value {
    match data {
        EventData::Null => Value::Null,
        EventData::Bool(b) => Value::Bool(*b),
        EventData::Int(i) => Value::from(*i),
        EventData::String(s) => Value::String(s.clone()),
        EventData::List(items) => Value::Array(items.iter().map(json).collect()),
        EventData::Map(pairs) => Value::Object(pairs.iter().map(|(k, v)| (k.clone(), json(v))).collect::<Map<_, _>>()),
    }
}

/// The bytes that are signed and sent.
pub fn envelope(event: &Event) -> Vec<u8> {
    let mut map = Map::new();
    map.insert("id".into(), Value::String(event.id.to_string()));
    map.insert("object".into(), Value::String("event".into()));
    map.insert("type".into(), Value::String(event.event_type.as_str().into()));
    map.insert("mode".into(), Value::String(event.scope.mode.as_str().into()));
    map.insert(
        "createdAt".into(),
        Value::String(event.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    );
    map.insert("data".into(), json(&event.data));
    Value::Object(map).to_string().into_bytes()
}
