//! The time as the state writes it.

/// The time now, RFC 3339 UTC with seconds (`2026-11-24T02:00:00Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
