//! TLS for the connection: libpq's `sslmode` and `sslrootcert` parameters (rust-postgres knows
//! neither `sslrootcert` nor the `verify-*` modes, so they are taken out of the connection
//! string here), the roots and the certificate verifier, and what a failed handshake means.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | not read |
//! | `prefer` (default) | when the server offers it, else plaintext | as `verify-full` |
//! | `require` | always | as `verify-full` |
//! | `verify-ca` | always | signed by one of the roots (or is one); any host name |
//! | `verify-full` | always | signed by one of the roots (or is one), valid for the host |
//!
//! Unlike libpq, `prefer` and `require` verify too: a TLS connection is never unverified. The
//! roots are the certificates of `sslrootcert=<file>` (PEM), else those of the file
//! `SSL_CERT_FILE` names, else the system's (`sslrootcert=system`, libpq's name for these
//! defaults, is the same as no `sslrootcert`). `verify-ca` with the system's roots is refused,
//! as libpq refuses it: a public CA signs certificates for anyone's hosts, so without the name
//! check any of them would do.
//!
//! A server certificate that is itself one of the given roots is trusted as itself: the usual
//! self-signed certificate (which `openssl req -x509` makes a CA certificate, and webpki refuses
//! a CA certificate as a server's own), or a CA-signed one given without its CA. For such a
//! certificate webpki's refusal of a CA certificate (`CaUsedAsEndEntity`) or of a certificate
//! without a known issuer (`UnknownIssuer`) is waived: webpki checks the certificate's own
//! validity period and key usage before either, and the host name is checked after.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use postgres::config::SslMode as WireMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use scriptorium_session_dag::Error;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The environment variable naming a PEM file of roots that replaces the system's.
const CERT_FILE_ENV: &str = "SSL_CERT_FILE";

/// The remedy for an untrusted certificate when no roots were given.
const GIVE_THE_CA: &str = "give its CA (or the self-signed certificate itself) with \
    `?sslrootcert=/path/ca.pem` in the URL or SSL_CERT_FILE=/path/ca.pem, or use \
    `sslmode=disable` only on a trusted network";

/// libpq's `sslmode`, as this store implements it (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Mode, Error> {
        Ok(match value {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            "allow" => {
                return Err(tls_error(
                    "sslmode=allow (plaintext first) is not supported: use `prefer` (TLS when \
                     the server offers it, verified) or `disable`",
                ));
            }
            other => {
                return Err(tls_error(format!(
                    "sslmode={other:?} is not a mode: use disable, prefer, require, verify-ca or \
                     verify-full"
                )));
            }
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }

    /// The mode rust-postgres is given: whether TLS is off, optional or required.
    fn wire(self) -> WireMode {
        match self {
            Mode::Disable => WireMode::Disable,
            Mode::Prefer => WireMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => WireMode::Require,
        }
    }
}

/// Where the roots come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    /// The system's, through the platform verifier.
    System,
    /// A PEM file: `sslrootcert=` (`env: false`) or `SSL_CERT_FILE` (`env: true`).
    File { path: PathBuf, env: bool },
}

impl Roots {
    /// How a message names the roots: `sslrootcert=/x.pem`, `SSL_CERT_FILE=/x.pem`.
    fn name(&self) -> String {
        match self {
            Roots::System => "the system's roots".into(),
            Roots::File { path, env: false } => format!("sslrootcert={}", path.display()),
            Roots::File { path, env: true } => format!("{CERT_FILE_ENV}={}", path.display()),
        }
    }
}

/// The connection's TLS: the connector, and what a failure message needs.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) connector: MakeRustlsConnect,
    mode: Mode,
    roots: Roots,
}

/// A permanent TLS configuration error.
fn tls_error(message: impl Into<String>) -> Error {
    Error::DatabaseTls { message: format!("TLS: {}", message.into()) }
}

/// The TLS settings of a connection string.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    mode: Mode,
    root_cert: Option<String>,
}

/// Reads `url` (`postgres://…` or `key=value …`): rust-postgres's configuration, with the TLS
/// mode applied, and the TLS settings ([`Tls::new`] reads the roots).
pub(crate) fn configure(url: &str) -> Result<(postgres::Config, Settings), Error> {
    let (rest, parameters) = split_parameters(url);
    let mut config: postgres::Config = rest.parse().map_err(|e| Error::Database {
        message: format!("invalid PostgreSQL connection string: {e}"),
        retryable: false,
    })?;
    let mut mode = Mode::Prefer;
    let mut root_cert = None;
    for (key, value) in parameters {
        match key {
            Parameter::SslMode => mode = Mode::parse(&value)?,
            Parameter::SslRootCert => root_cert = Some(value),
        }
    }
    config.ssl_mode(mode.wire());
    Ok((config, Settings { mode, root_cert }))
}

impl Tls {
    /// The TLS of `settings`: reads the roots' file (`sslrootcert=`, else `SSL_CERT_FILE`), or
    /// the system's roots once per process; nothing when `sslmode=disable`.
    pub(crate) fn new(settings: &Settings) -> Result<Tls, Error> {
        let mode = settings.mode;
        // libpq's name for the default roots.
        let root_cert = settings.root_cert.as_deref().filter(|file| *file != "system");
        let env = std::env::var_os(CERT_FILE_ENV).filter(|file| !file.is_empty());
        let roots = match (root_cert, env) {
            _ if mode == Mode::Disable => Roots::System,
            (None, None) => Roots::System,
            (Some(path), _) => Roots::File { path: PathBuf::from(path), env: false },
            (None, Some(path)) => Roots::File { path: PathBuf::from(path), env: true },
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let connector = match (&roots, mode) {
            // Never used: rust-postgres does not start TLS.
            (_, Mode::Disable) => connector(&provider, Verifier::new(&provider, Vec::new(), true))?,
            (Roots::System, Mode::VerifyCa) => {
                return Err(tls_error(
                    "sslmode=verify-ca checks that a trusted CA signed the server's certificate \
                     but not the host name, so it needs that CA given (`sslrootcert=/path/ca.pem` \
                     or SSL_CERT_FILE): with the system's public roots, a certificate any of them \
                     signed for any host would do; use sslmode=verify-full",
                ));
            }
            (Roots::System, _) => platform()?,
            (Roots::File { path, .. }, _) => {
                let certificates = read_roots(path, &roots)?;
                let verifier = Verifier::new(&provider, certificates, mode != Mode::VerifyCa);
                connector(&provider, verifier)?
            }
        };
        Ok(Tls { connector, mode, roots })
    }
}

/// The certificates of the PEM file `path` (named `roots` in messages).
fn read_roots(path: &Path, roots: &Roots) -> Result<Vec<CertificateDer<'static>>, Error> {
    let name = roots.name();
    let bytes = std::fs::read(path).map_err(|e| tls_error(format!("cannot read {name}: {e}")))?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(format!("{name} is not a PEM file of certificates: {e}")))?;
    if certificates.is_empty() {
        return Err(tls_error(format!(
            "{name} holds no certificate (a PEM file with `-----BEGIN CERTIFICATE-----` blocks)"
        )));
    }
    for (i, certificate) in certificates.iter().enumerate() {
        RootCertStore::empty().add(certificate.clone()).map_err(|e| {
            tls_error(format!("certificate {} of {name} cannot be a root: {e}", i + 1))
        })?;
    }
    Ok(certificates)
}

fn connector(
    provider: &Arc<CryptoProvider>,
    verifier: Verifier,
) -> Result<MakeRustlsConnect, Error> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The connector with the platform's verifier and roots, built once per process (reading the
/// roots is the costly part).
fn platform() -> Result<MakeRustlsConnect, Error> {
    static TLS: OnceLock<Result<MakeRustlsConnect, String>> = OnceLock::new();
    let built = TLS.get_or_init(|| {
        use rustls_platform_verifier::BuilderVerifierExt;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_platform_verifier())
            .map_err(|e| e.to_string())?
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    });
    built.clone().map_err(|e| tls_error(format!("cannot set up TLS with the system's roots: {e}")))
}

/// The verifier of given roots (see the module documentation).
#[derive(Debug)]
struct Verifier {
    roots: Arc<RootCertStore>,
    /// The given certificates: a server certificate among them is trusted as itself.
    given: Vec<CertificateDer<'static>>,
    /// Whether the host name is checked (all modes but `verify-ca`).
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    /// The verifier of `given` (each one a valid trust anchor: [`read_roots`] checked them).
    fn new(
        provider: &Arc<CryptoProvider>,
        given: Vec<CertificateDer<'static>>,
        check_name: bool,
    ) -> Verifier {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(given.iter().cloned());
        Verifier { roots: Arc::new(roots), given, check_name, provider: Arc::clone(provider) }
    }
}

/// Whether `err` is webpki's refusal of a CA certificate as a server's own.
fn is_ca_used_as_end_entity(err: &rustls::Error) -> bool {
    match err {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other
            .0
            .downcast_ref::<webpki::Error>()
            .is_some_and(|e| matches!(e, webpki::Error::CaUsedAsEndEntity)),
        _ => false,
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let certificate = ParsedCertificate::try_from(end_entity)?;
        let algorithms = self.provider.signature_verification_algorithms.all;
        match verify_server_cert_signed_by_trust_anchor(
            &certificate,
            &self.roots,
            intermediates,
            now,
            algorithms,
        ) {
            Ok(()) => {}
            // A given root itself: webpki checked its validity period and key usage before it
            // refused it as a CA certificate or for its issuer.
            Err(err)
                if (is_ca_used_as_end_entity(&err)
                    || matches!(
                        err,
                        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
                    ))
                    && self.given.iter().any(|given| given.as_ref() == end_entity.as_ref()) => {}
            Err(err) => return Err(err),
        }
        if self.check_name {
            verify_server_name(&certificate, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS settings rust-postgres does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parameter {
    SslMode,
    SslRootCert,
}

impl Parameter {
    fn from_key(key: &str) -> Option<Parameter> {
        match key {
            "sslmode" => Some(Parameter::SslMode),
            "sslrootcert" => Some(Parameter::SslRootCert),
            _ => None,
        }
    }
}

/// `url` without its `sslmode` and `sslrootcert` parameters, and those (decoded, in order).
/// A string that does not parse is returned whole, for rust-postgres to say what is wrong.
fn split_parameters(url: &str) -> (String, Vec<(Parameter, String)>) {
    let split = match ["postgres://", "postgresql://"].iter().find(|p| url.starts_with(**p)) {
        Some(prefix) => split_url(url, prefix.len()),
        None => split_key_values(url),
    };
    split.unwrap_or_else(|| (url.to_owned(), Vec::new()))
}

/// [`split_parameters`] of the URL form. As rust-postgres reads it, the credentials run to the
/// first `@` and the parameters start at the next `?`; they are `&`-separated `key=value` pairs,
/// percent-encoded.
fn split_url(url: &str, prefix: usize) -> Option<(String, Vec<(Parameter, String)>)> {
    let rest = &url[prefix..];
    let host_start = rest.find('@').map_or(0, |at| at + 1);
    let Some(question) = rest[host_start..].find('?') else {
        return Some((url.to_owned(), Vec::new()));
    };
    let query_start = prefix + host_start + question;
    let mut found = Vec::new();
    let mut kept = Vec::new();
    for piece in url[query_start + 1..].split('&') {
        let parameter = piece.split_once('=').and_then(|(key, value)| {
            let key = percent_encoding::percent_decode_str(key).decode_utf8().ok()?;
            Some((Parameter::from_key(&key)?, value))
        });
        match parameter {
            Some((parameter, value)) => {
                let value = percent_encoding::percent_decode_str(value).decode_utf8().ok()?;
                found.push((parameter, value.into_owned()));
            }
            None => kept.push(piece),
        }
    }
    let mut rest = url[..query_start].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Some((rest, found))
}

/// [`split_parameters`] of the `key=value …` form, read as rust-postgres reads it (values
/// quoted with `'`, `\` escaping the next character); the other parameters are written back
/// quoted.
fn split_key_values(text: &str) -> Option<(String, Vec<(Parameter, String)>)> {
    let mut chars = text.chars().peekable();
    let mut found = Vec::new();
    let mut kept: Vec<(String, String)> = Vec::new();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        if key.is_empty() {
            break;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        chars.next_if_eq(&'=')?;
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next()? {
                    '\'' => break,
                    '\\' => value.push(chars.next()?),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
            if value.is_empty() {
                return None;
            }
        }
        match Parameter::from_key(&key) {
            Some(parameter) => found.push((parameter, value)),
            None => kept.push((key, value)),
        }
    }
    if found.is_empty() {
        return Some((text.to_owned(), found));
    }
    let rest: Vec<String> = kept
        .iter()
        .map(|(key, value)| format!("{key}='{}'", value.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect();
    Some((rest.join(" "), found))
}

/// What a failed connection says when TLS is why: `None` when it is not (the server is not
/// there, refused the login, …: the caller's ordinary database error).
pub(crate) fn connect_error(err: &postgres::Error, tls: &Tls) -> Option<Error> {
    if let Some(refused) = rustls_cause(err) {
        return Some(tls_error(explain(refused, tls)));
    }
    // rust-postgres says why it did not start TLS only in its message ("server does not
    // support TLS", "no hostname provided for TLS handshake"); a handshake cut short by the
    // network is an IO error, and stays one.
    let ours = err.to_string() == "error performing TLS handshake";
    let io = std::iter::successors(std::error::Error::source(err), |e| e.source())
        .any(|e| e.is::<std::io::Error>());
    if !ours || io {
        return None;
    }
    let cause = std::error::Error::source(err).map(ToString::to_string).unwrap_or_default();
    let mode = tls.mode.as_str();
    Some(tls_error(if cause == "server does not support TLS" {
        format!(
            "the server does not offer TLS, and sslmode={mode} requires it: turn `ssl` on in \
             the server's configuration, or use `sslmode=prefer` or `disable` only on a trusted \
             network"
        )
    } else {
        format!("TLS could not start ({cause}), and sslmode={mode} requires it")
    }))
}

/// The rustls error in `err`'s chain. An IO error's `source` skips the error it wraps, so each
/// IO error is opened with `get_ref`.
fn rustls_cause<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(err);
    while let Some(current) = next {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match current.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => current.source(),
        };
    }
    None
}

/// The reason a handshake failed, and the remedy.
fn explain(err: &rustls::Error, tls: &Tls) -> String {
    let roots = tls.roots.name();
    let given = match &tls.roots {
        Roots::System => GIVE_THE_CA.to_owned(),
        Roots::File { .. } => format!(
            "put its CA (or the self-signed certificate itself) in {roots}, or use \
             `sslmode=disable` only on a trusted network"
        ),
    };
    let rustls::Error::InvalidCertificate(refusal) = err else {
        return format!("the TLS handshake failed: {err}");
    };
    match refusal {
        CertificateError::UnknownIssuer => format!(
            "the server's certificate is not trusted (UnknownIssuer: nothing in {roots} signed \
             it; it is self-signed or from a private CA): {given}"
        ),
        _ if is_ca_used_as_end_entity(err) => format!(
            "the server's certificate is not trusted (CaUsedAsEndEntity: it is a CA \
             certificate, as a self-signed one from `openssl req -x509` is, and not in \
             {roots}): {given}"
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!(
                "the server's certificate is trusted but not valid for this host \
                 (NotValidForName: {refusal}; only its subjectAltName counts, not its common \
                 name): connect by a name it has, or use `sslmode=verify-ca` (with \
                 `sslrootcert=`) to check only that a trusted CA signed it"
            )
        }
        CertificateError::Expired
        | CertificateError::ExpiredContext { .. }
        | CertificateError::NotValidYet
        | CertificateError::NotValidYetContext { .. } => format!(
            "the server's certificate is outside its validity period ({refusal}): renew it on \
             the server, or check this machine's clock"
        ),
        _ => format!("the server's certificate is refused ({refusal})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, Vec<(Parameter, String)>) {
        split_parameters(url)
    }

    #[test]
    fn the_tls_parameters_are_taken_out_of_a_url() {
        let (rest, found) = split(concat!(
            "postgres://u:p%3F@h:5432/db?sslmode=verify-full&application_name=x",
            "&sslrootcert=%2Ftmp%2Fca%20file.pem"
        ));
        assert_eq!(rest, "postgres://u:p%3F@h:5432/db?application_name=x");
        assert_eq!(
            found,
            [
                (Parameter::SslMode, "verify-full".to_owned()),
                (Parameter::SslRootCert, "/tmp/ca file.pem".to_owned())
            ]
        );
        let (rest, found) = split("postgresql://h/db?sslrootcert=/a.pem");
        assert_eq!((rest.as_str(), found.len()), ("postgresql://h/db", 1));
        let (rest, found) = split("postgres://h/db?connect_timeout=5");
        assert_eq!((rest.as_str(), found.len()), ("postgres://h/db?connect_timeout=5", 0));
        // A `?` in the credentials is not the query (rust-postgres reads them to the first `@`).
        let (rest, found) = split("postgres://u:a?b@h/db?sslmode=require");
        assert_eq!((rest.as_str(), found[0].1.as_str()), ("postgres://u:a?b@h/db", "require"));
    }

    #[test]
    fn the_tls_parameters_are_taken_out_of_key_values() {
        let (rest, found) =
            split("host=h dbname='my db' sslmode = verify-ca sslrootcert='/x/it\\'s.pem' user=u");
        assert_eq!(rest, "host='h' dbname='my db' user='u'");
        assert_eq!(
            found,
            [
                (Parameter::SslMode, "verify-ca".to_owned()),
                (Parameter::SslRootCert, "/x/it's.pem".to_owned())
            ]
        );
        let parsed: postgres::Config = rest.parse().expect("rust-postgres reads it back");
        assert_eq!(parsed.get_dbname(), Some("my db"));
        // Without them, or unparsable, the text is left to rust-postgres as it was.
        assert_eq!(split("host=h user=u").0, "host=h user=u");
        assert_eq!(split("host='h sslmode=disable").0, "host='h sslmode=disable");
    }

    #[test]
    fn modes_and_roots_that_cannot_work_are_refused_before_connecting() {
        let open = |url: &str| configure(url).and_then(|(_, settings)| Tls::new(&settings));
        let bad = |url: &str| match open(url) {
            Err(err @ Error::DatabaseTls { .. }) => err.to_string(),
            Err(other) => panic!("{url}: {other:?}"),
            Ok(_) => panic!("{url} was accepted"),
        };
        assert!(bad("postgres://h/db?sslmode=allow").contains("prefer"));
        assert!(bad("postgres://h/db?sslmode=verify").contains("verify-full"));
        let missing = bad("postgres://h/db?sslrootcert=/nonexistent/ca.pem");
        assert!(missing.contains("cannot read sslrootcert=/nonexistent/ca.pem"), "{missing}");
        // No TLS: no roots are read.
        assert!(open("postgres://h/db?sslmode=disable&sslrootcert=/nonexistent").is_ok());
    }

    /// A self-signed CA certificate given as the root is trusted as itself only within its
    /// validity period: webpki checks the period before it refuses a CA certificate as a
    /// server's own (or its issuer as unknown), which is what waiving those refusals relies on.
    /// (Within the period, and by name, it is tested through the binary:
    /// `crates/cli/tests/it/pg_tls.rs`.)
    #[test]
    fn a_given_self_signed_certificate_is_still_checked_for_its_validity_period() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("server.pem");
        let out = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"])
            .args(["-addext", "basicConstraints=critical,CA:TRUE", "-keyout"])
            .arg(dir.path().join("server.key"))
            .arg("-out")
            .arg(&file)
            .output()
            .expect("the openssl command runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let roots = Roots::File { path: file.clone(), env: false };
        let given = read_roots(&file, &roots).expect("the certificate reads");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Verifier::new(&provider, given.clone(), true);
        let name = ServerName::try_from("127.0.0.1").expect("an IP address");
        let at = |secs: u64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        let verify = |now| verifier.verify_server_cert(&given[0], &[], &name, &[], now);
        let year_2242 = at(u64::from(u32::MAX) * 2);
        assert!(
            matches!(
                verify(year_2242),
                Err(rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. }))
            ),
            "{:?}",
            verify(year_2242)
        );
        assert!(
            matches!(
                verify(at(0)),
                Err(rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. }))
            ),
            "{:?}",
            verify(at(0))
        );
    }
}
