//! SASL PLAIN (RFC 4616) tokens of AUTH_RESPONSE, decoded as Cassandra's
//! `PlainTextSaslAuthenticator` does.

use crate::handler::Credentials;

/// Splits `[authzid] NUL authcid NUL password`. Like Cassandra, it reads
/// from the end, so the optional authorization id is ignored. The error is
/// Cassandra's message, sent as BAD_CREDENTIALS.
pub(crate) fn decode_plain_token(token: &[u8]) -> Result<Credentials, &'static str> {
    let mut fields = token.rsplit(|b| *b == 0);
    let password = fields.next().filter(|p| !p.is_empty());
    let username = fields.next().filter(|u| !u.is_empty());
    // `rsplit` yields the whole token when it has no NUL at all.
    let has_separator = token.contains(&0);
    let Some(password) = password.filter(|_| has_separator) else {
        return Err("Password must not be null");
    };
    let Some(username) = username else {
        return Err("Authentication ID must not be null");
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    Ok(Credentials {
        username: text(username),
        password: text(password),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(token: &[u8]) -> Result<(String, String), &'static str> {
        decode_plain_token(token).map(|c| (c.username, c.password))
    }

    #[test]
    fn plain_tokens() {
        let ok = |u: &str, p: &str| Ok((u.to_string(), p.to_string()));
        assert_eq!(decoded(b"\0cassandra\0secret"), ok("cassandra", "secret"));
        assert_eq!(
            decoded(b"admin\0cassandra\0secret"),
            ok("cassandra", "secret")
        );
        assert_eq!(decoded(b"\0cassandra\0"), Err("Password must not be null"));
        assert_eq!(decoded(b"no separators"), Err("Password must not be null"));
        assert_eq!(
            decoded(b"\0\0secret"),
            Err("Authentication ID must not be null")
        );
        assert_eq!(decoded(b"secret"), Err("Password must not be null"));
        assert_eq!(decoded(b""), Err("Password must not be null"));
    }
}
