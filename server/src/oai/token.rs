//! Stateless resumption tokens.
//!
//! A token carries everything needed to go on with a list: the verb, the request's
//! arguments (`metadataPrefix`, `set`, `from`, `until`), the position reached (the last
//! template and URL sent: lists go in that order, see `soif_store::datestamps`), the
//! cursor, the complete list size and the expiry time. The server keeps nothing between
//! requests, so a harvest survives a restart, and a load running meanwhile makes no
//! record that existed throughout be skipped.
//!
//! Tokens are authenticated with HMAC-SHA-256 under a key kept in the catalog
//! (`soif_meta` key `oai_token_key`, 32 random bytes made the first time the server
//! opens the catalog for writing), so a token survives a restart but cannot be forged or
//! altered: `v1.` + base64url(payload) + `.` + base64url(tag). A malformed, altered or
//! expired token is `badResumptionToken`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;

/// What a token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListState {
    /// `ListIdentifiers` or `ListRecords`.
    pub verb: String,
    pub prefix: String,
    pub set: Option<Vec<u8>>,
    pub from: Option<String>,
    pub until: Option<String>,
    /// The last template and URL sent.
    pub after: (Vec<u8>, Vec<u8>),
    /// Records sent before the next page.
    pub cursor: u64,
    pub total: u64,
    /// Unix seconds.
    pub expires: i64,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

fn some(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Makes the token for `state` under `key`.
pub fn encode(key: &[u8], state: &ListState) -> String {
    // Every field is hex, a fixed word or a date: none holds `|`.
    let payload = [
        "1",
        &state.verb,
        &state.prefix,
        &state
            .set
            .as_deref()
            .map(hex)
            .map_or(String::from("-"), |h| format!("s{h}")),
        opt(&state.from),
        opt(&state.until),
        &hex(&state.after.0),
        &hex(&state.after.1),
        &state.cursor.to_string(),
        &state.total.to_string(),
        &state.expires.to_string(),
    ]
    .join("|");
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), payload.as_bytes());
    format!(
        "v1.{}.{}",
        URL_SAFE_NO_PAD.encode(payload),
        URL_SAFE_NO_PAD.encode(tag.as_ref())
    )
}

/// The state of a token made under `key`, if it is authentic and not expired at `now`
/// (Unix seconds); else why not.
pub fn decode(key: &[u8], token: &str, now: i64) -> Result<ListState, &'static str> {
    let bad = "the resumption token is malformed or was altered";
    let rest = token.strip_prefix("v1.").ok_or(bad)?;
    let (payload, tag) = rest.split_once('.').ok_or(bad)?;
    let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| bad)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| bad)?;
    hmac::verify(&hmac::Key::new(hmac::HMAC_SHA256, key), &payload, &tag).map_err(|_| bad)?;
    let payload = String::from_utf8(payload).map_err(|_| bad)?;
    let f: Vec<&str> = payload.split('|').collect();
    if f.len() != 11 || f[0] != "1" {
        return Err(bad);
    }
    let set = match f[3] {
        "-" => None,
        s => Some(unhex(s.strip_prefix('s').ok_or(bad)?).ok_or(bad)?),
    };
    let state = ListState {
        verb: f[1].to_string(),
        prefix: f[2].to_string(),
        set,
        from: some(f[4]),
        until: some(f[5]),
        after: (unhex(f[6]).ok_or(bad)?, unhex(f[7]).ok_or(bad)?),
        cursor: f[8].parse().map_err(|_| bad)?,
        total: f[9].parse().map_err(|_| bad)?,
        expires: f[10].parse().map_err(|_| bad)?,
    };
    if state.expires < now {
        return Err("the resumption token has expired; start the list again");
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ListState {
        ListState {
            verb: "ListRecords".into(),
            prefix: "oai_dc".into(),
            set: Some(b"FILE".to_vec()),
            from: Some("2001-01-01T00:00:00Z".into()),
            until: None,
            after: (b"FILE".to_vec(), b"http://x/\xff|".to_vec()),
            cursor: 100,
            total: 1234,
            expires: 2_000_000_000,
        }
    }

    #[test]
    fn tokens_round_trip_and_refuse_tampering_and_expiry() {
        let key = [7u8; 32];
        let t = encode(&key, &state());
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        assert_eq!(decode(&key, &t, 1_000).unwrap(), state());
        // Another key, a changed byte, garbage, expiry.
        assert!(decode(&[8u8; 32], &t, 1_000).is_err());
        let mut chars: Vec<char> = t.chars().collect();
        let i = 10;
        chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
        let altered: String = chars.into_iter().collect();
        assert!(decode(&key, &altered, 1_000).is_err());
        assert!(decode(&key, "junk", 1_000).is_err());
        assert!(decode(&key, "", 1_000).is_err());
        assert!(decode(&key, &t, 2_000_000_001)
            .unwrap_err()
            .contains("expired"));
    }
}
