//! A scratch PostgreSQL cluster for the tests of the PostgreSQL session store: a real server,
//! never a mock.
//!
//! [`Cluster::start`] runs `initdb` into `target/pg/<name>-<pid>/` (or, as root when the
//! `postgres` user cannot reach the checkout, `$TMPDIR/scriptorium-pg/`; trust authentication, user
//! `scriptorium`, `fsync` off: the cluster is thrown away) and `pg_ctl start` on a free
//! loopback port with Unix sockets off; dropping the cluster stops the server and removes the
//! directory. A cluster left behind by a killed run is stopped and removed by the next start.
//! As root (CI) the server runs as the `postgres` user through `runuser`, since `initdb`
//! refuses root.
//!
//! The binaries come from `$SCRIPTORIUM_PG_BIN`, else the newest
//! `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package), else `PATH`. Without
//! them the trials made by [`pg_trial`] are reported as ignored (not run), never as passed;
//! `SCRIPTORIUM_REQUIRE_POSTGRES=1` (set by `cargo xtask ci`) turns that into a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use libtest_mimic::{Failed, Trial};

/// The environment variable naming the directory of the PostgreSQL server binaries.
pub const BIN_ENV: &str = "SCRIPTORIUM_PG_BIN";
/// The environment variable that makes missing PostgreSQL binaries a failure.
pub const REQUIRE_ENV: &str = "SCRIPTORIUM_REQUIRE_POSTGRES";

/// The directory holding `initdb` and `pg_ctl`, if any.
pub fn bin_dir() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os(BIN_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return has(&dir).then_some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| has(dir))
}

/// Whether missing binaries must fail the suite.
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// Whether a cluster speaks TLS, and with which certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tls {
    Off,
    /// A test CA signs the server's certificate.
    Ca,
    /// The server's certificate signs itself.
    SelfSigned,
}

/// A running scratch cluster.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    tls: Tls,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    databases: AtomicUsize,
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Whether every existing ancestor of `path` lets other users through (`o+x`).
fn traversable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .filter_map(|dir| std::fs::metadata(dir).ok())
        .all(|meta| meta.permissions().mode() & 0o001 != 0)
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Runs a server binary (as `postgres` when `as_postgres`), failing with its output.
fn run(bin: &Path, as_postgres: bool, program: &str, args: &[&str]) -> Result<(), String> {
    let path = bin.join(program);
    let mut command = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&path);
        c
    } else {
        Command::new(&path)
    };
    let out = command
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{program} {} failed ({}): {}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

impl Cluster {
    /// Creates and starts a cluster for the test binary `name`.
    pub fn start(name: &str) -> Result<Cluster, String> {
        Cluster::start_with(name, Tls::Off)
    }

    /// [`Cluster::start`] with TLS on: a test CA (see [`Cluster::ca_file`]) signs the server's
    /// certificate for `localhost` and `127.0.0.1` (made with the `openssl` command).
    pub fn start_tls(name: &str) -> Result<Cluster, String> {
        Cluster::start_with(name, Tls::Ca)
    }

    /// [`Cluster::start`] with TLS on and a self-signed server certificate
    /// ([`Cluster::certificate_file`]), made as `openssl req -x509` makes one: it is a CA
    /// certificate (`basicConstraints` `CA:TRUE`) and names only `127.0.0.1` (not `localhost`).
    pub fn start_self_signed(name: &str) -> Result<Cluster, String> {
        Cluster::start_with(name, Tls::SelfSigned)
    }

    fn start_with(name: &str, tls: Tls) -> Result<Cluster, String> {
        let bin = bin_dir().ok_or_else(|| {
            format!(
                "PostgreSQL server binaries not found (set {BIN_ENV}, or install Debian's \
                 postgresql package)"
            )
        })?;
        let as_postgres = running_as_root();
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => crate::repo_root().join("target"),
        };
        // The `postgres` user must reach the directory: a checkout under a private home (root's
        // own, 0700) is not reachable, and then the cluster goes to the temporary directory.
        let base = if !as_postgres || traversable_by_others(&target) {
            target.join("pg")
        } else {
            std::env::temp_dir().join("scriptorium-pg")
        };
        Cluster::remove_stale(&base, name, &bin, as_postgres);
        let dir = base.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if as_postgres {
            use std::os::unix::fs::PermissionsExt;
            // Whatever the umask, the `postgres` user passes through the base directory.
            let open = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(&base, open)
                .map_err(|e| format!("{}: {e}", base.display()))?;
            let status = Command::new("chown").arg("postgres:").arg(&dir).status();
            if !status.is_ok_and(|s| s.success()) {
                return Err(format!("cannot give {} to the postgres user", dir.display()));
            }
        }
        let data = dir.join("data");
        let data_arg = data.to_string_lossy().into_owned();
        run(
            &bin,
            as_postgres,
            "initdb",
            &["-D", &data_arg, "-A", "trust", "-U", "scriptorium", "-E", "UTF8", "--no-sync"],
        )?;
        let tls_options = match tls {
            Tls::Off => String::new(),
            Tls::Ca | Tls::SelfSigned => make_certificates(&dir, as_postgres, tls)?,
        };
        let log = dir.join("server.log").to_string_lossy().into_owned();
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port()?;
            let options = format!(
                "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' \
                 -c fsync=off -c full_page_writes=off -c max_connections=200{tls_options}"
            );
            match run(
                &bin,
                as_postgres,
                "pg_ctl",
                &["-D", &data_arg, "-l", &log, "-w", "-t", "60", "-o", &options, "start"],
            ) {
                Ok(()) => {
                    return Ok(Cluster {
                        dir,
                        tls,
                        bin,
                        port,
                        as_postgres,
                        databases: AtomicUsize::new(0),
                    });
                }
                Err(err) => last = err,
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(format!("the scratch PostgreSQL server did not start: {last}"))
    }

    /// Stops and removes clusters of `name` left by runs that were killed.
    fn remove_stale(base: &Path, name: &str, bin: &Path, as_postgres: bool) {
        let prefix = format!("{name}-");
        for entry in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let file_name = entry.file_name();
            let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            let alive = Path::new("/proc").join(pid).exists();
            if alive {
                continue;
            }
            let data = entry.path().join("data");
            if data.join("postmaster.pid").exists() {
                let data_arg = data.to_string_lossy().into_owned();
                let _ =
                    run(bin, as_postgres, "pg_ctl", &["-D", &data_arg, "-m", "immediate", "stop"]);
            }
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }

    /// The PEM file of the CA that signed the server's certificate (a [`Cluster::start_tls`]
    /// cluster only).
    pub fn ca_file(&self) -> Option<PathBuf> {
        (self.tls == Tls::Ca).then(|| self.dir.join("tls").join("ca.pem"))
    }

    /// The PEM file of the server's certificate (a cluster with TLS only); for a
    /// [`Cluster::start_self_signed`] cluster it is its own trust anchor.
    pub fn certificate_file(&self) -> Option<PathBuf> {
        (self.tls != Tls::Off).then(|| self.dir.join("tls").join("server.pem"))
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The connection URL of database `database`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://scriptorium@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a new, empty database and returns its URL.
    pub fn create_database(&self) -> Result<String, String> {
        let name = format!("t{}", self.databases.fetch_add(1, Ordering::SeqCst));
        let port = self.port.to_string();
        run(
            &self.bin,
            false,
            "createdb",
            &["-h", "127.0.0.1", "-p", &port, "-U", "scriptorium", &name],
        )?;
        Ok(self.url(&name))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data").to_string_lossy().into_owned();
        let _ =
            run(&self.bin, self.as_postgres, "pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Makes `<dir>/tls/`: for [`Tls::Ca`] a CA, and a server key and certificate it signs for
/// `localhost` and `127.0.0.1`; for [`Tls::SelfSigned`] a server key and a self-signed CA
/// certificate for `127.0.0.1` only. Returns the server options that turn TLS on with them.
fn make_certificates(dir: &Path, as_postgres: bool, kind: Tls) -> Result<String, String> {
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).map_err(|e| format!("{}: {e}", tls.display()))?;
    let extensions = tls.join("server.ext");
    std::fs::write(
        &extensions,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| e.to_string())?;
    let path = |name: &str| tls.join(name).to_string_lossy().into_owned();
    let self_signed: Vec<String> =
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"]
            .map(String::from)
            .into_iter()
            .chain(["-addext".into(), "subjectAltName=IP:127.0.0.1".into()])
            .chain(["-addext".into(), "basicConstraints=critical,CA:TRUE".into()])
            .chain(["-keyout".into(), path("server.key"), "-out".into(), path("server.pem")])
            .collect();
    let signed_by_ca: [Vec<String>; 3] = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj"]
            .map(String::from)
            .into_iter()
            .chain(["/CN=scriptorium test CA".into(), "-keyout".into(), path("ca.key")])
            .chain(["-out".into(), path("ca.pem")])
            .collect(),
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout"]
            .map(String::from)
            .into_iter()
            .chain([path("server.key"), "-out".into(), path("server.csr")])
            .collect(),
        ["x509", "-req", "-days", "2", "-in"]
            .map(String::from)
            .into_iter()
            .chain([path("server.csr"), "-CA".into(), path("ca.pem"), "-CAkey".into()])
            .chain([path("ca.key"), "-CAcreateserial".into(), "-out".into(), path("server.pem")])
            .chain(["-extfile".into(), extensions.to_string_lossy().into_owned()])
            .collect(),
    ];
    let steps = match kind {
        Tls::SelfSigned => vec![self_signed],
        Tls::Off | Tls::Ca => Vec::from(signed_by_ca),
    };
    for args in steps {
        let out = Command::new("openssl")
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("openssl: {e}"))?;
        if !out.status.success() {
            return Err(format!("openssl {}: {}", args[0], String::from_utf8_lossy(&out.stderr)));
        }
    }
    // The server reads its key only when it is private to the user it runs as.
    let key = tls.join("server.key");
    if as_postgres {
        let status = Command::new("chown").arg("-R").arg("postgres:").arg(&tls).status();
        if !status.is_ok_and(|s| s.success()) {
            return Err(format!("cannot give {} to the postgres user", tls.display()));
        }
    }
    let status = Command::new("chmod").arg("600").arg(&key).status();
    if !status.is_ok_and(|s| s.success()) {
        return Err(format!("cannot make {} private", key.display()));
    }
    Ok(format!(
        " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
        path("server.pem"),
        path("server.key")
    ))
}

/// Starts the cluster of a test binary: `None` when the binaries are missing and not required
/// (its trials are then ignored); an error when they are required but missing, or when the
/// server does not start.
pub fn cluster(name: &str) -> Result<Option<Arc<Cluster>>, String> {
    cluster_with(name, Tls::Off)
}

/// [`cluster`] with TLS on ([`Cluster::start_tls`]).
pub fn tls_cluster(name: &str) -> Result<Option<Arc<Cluster>>, String> {
    cluster_with(name, Tls::Ca)
}

/// [`cluster`] with TLS on and a self-signed certificate ([`Cluster::start_self_signed`]).
pub fn self_signed_cluster(name: &str) -> Result<Option<Arc<Cluster>>, String> {
    cluster_with(name, Tls::SelfSigned)
}

fn cluster_with(name: &str, tls: Tls) -> Result<Option<Arc<Cluster>>, String> {
    if bin_dir().is_none() && !required() {
        eprintln!(
            "note: PostgreSQL server binaries not found ({BIN_ENV}); the PostgreSQL trials are \
             reported as ignored (not run)"
        );
        return Ok(None);
    }
    Cluster::start_with(name, tls).map(|c| Some(Arc::new(c)))
}

/// The real `pg_dump` of database `url` (with the scratch cluster's binaries), as a backup would
/// run it, without the `\restrict` and `\unrestrict` lines newer versions frame it with (their
/// key is random per dump, and no data of the database).
pub fn dump(url: &str) -> Result<Vec<u8>, String> {
    let bin = bin_dir().ok_or("no PostgreSQL binaries")?;
    let out = std::process::Command::new(bin.join("pg_dump"))
        .arg("--dbname")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("pg_dump: {e}"))?;
    if !out.status.success() {
        return Err(format!("pg_dump: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let framing =
        |line: &[u8]| line.starts_with(b"\\restrict ") || line.starts_with(b"\\unrestrict ");
    let mut dump = Vec::with_capacity(out.stdout.len());
    for line in out.stdout.split_inclusive(|&b| b == b'\n').filter(|line| !framing(line)) {
        dump.extend_from_slice(line);
    }
    Ok(dump)
}

/// A trial that needs the scratch cluster: run with it; ignored (not run) when `cluster` is
/// `Ok(None)`; failing with the reason when the cluster could not start.
pub fn pg_trial<F>(
    name: impl Into<String>,
    cluster: &Result<Option<Arc<Cluster>>, String>,
    test: F,
) -> Trial
where
    F: FnOnce(&Cluster) -> Result<(), Failed> + Send + 'static,
{
    let name = name.into();
    match cluster {
        Ok(Some(cluster)) => {
            let cluster = Arc::clone(cluster);
            Trial::test(name, move || test(&cluster))
        }
        Ok(None) => {
            Trial::test(name, || Ok(())).with_ignored_flag(true).with_kind("needs-postgresql")
        }
        Err(reason) => {
            let reason = reason.clone();
            Trial::test(name, move || Err(reason.into()))
        }
    }
}
