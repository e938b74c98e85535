//! The connection: one `postgres::Client` owned by a worker thread, which runs the store's
//! calls one at a time.
//!
//! Why a thread: the synchronous client drives a private Tokio runtime and panics when called
//! from inside another runtime (the server's handlers, `watch`). Calls are sent to the worker
//! as closures and the caller waits on a plain channel, so a store call blocks like a file
//! read, wherever it is made. A lost connection is reopened by the next call.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;

use postgres::{Client, Statement};
use scriptorium_session_dag::Error;

use crate::tls::{self, Tls};

/// A database error as the store's error: the server's message (never the password), and
/// whether retrying can help (a lost connection, a serialization failure or deadlock, a server
/// shutting down or out of resources).
pub(crate) fn db_error(err: postgres::Error) -> Error {
    let retryable = err.is_closed()
        || err.code().is_some_and(|code| {
            let code = code.code();
            code.starts_with("08")
                || code.starts_with("53")
                || code.starts_with("57P")
                || code == "40001"
                || code == "40P01"
        })
        || std::error::Error::source(&err).is_some_and(|s| s.is::<std::io::Error>());
    let message = match err.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => err.to_string(),
    };
    Error::Database { message, retryable }
}

/// What the worker holds: the configuration to (re)connect with, the client, and the prepared
/// statements of this connection.
pub(crate) struct Conn {
    config: postgres::Config,
    tls: Tls,
    client: Option<Client>,
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    /// The client, connected (and the schema migrated) if it was not.
    pub(crate) fn client(&mut self) -> Result<&mut Client, Error> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.statements.clear();
            self.client = None;
            let mut client = self.config.connect(self.tls.connector.clone()).map_err(|err| {
                tls::connect_error(&err, &self.tls).unwrap_or_else(|| db_error(err))
            })?;
            crate::migrate::apply(&mut client)?;
            // Plan every execution with its parameters and the tables' current size: a generic
            // plan made while a table was small (a fresh database being filled, before
            // autovacuum's first ANALYZE) would keep scanning it whole as it grows, turning the
            // O(batch) appends and merges and the O(walked) walk into O(session).
            client.batch_execute("SET plan_cache_mode = force_custom_plan").map_err(db_error)?;
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("connected just above"))
    }

    /// The client and the statements `sql`, prepared once per connection.
    pub(crate) fn prepared<const N: usize>(
        &mut self,
        sql: [&'static str; N],
    ) -> Result<(&mut Client, [Statement; N]), Error> {
        self.client()?;
        let client = self.client.as_mut().expect("connected just above");
        for text in sql {
            if !self.statements.contains_key(text) {
                let statement = client.prepare(text).map_err(db_error)?;
                self.statements.insert(text, statement);
            }
        }
        let statements = sql.map(|text| self.statements[text].clone());
        Ok((client, statements))
    }
}

type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// The handle on the worker thread.
pub(crate) struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the worker for `config` and `tls` (it connects on the first call).
    pub(crate) fn start(config: postgres::Config, tls: Tls) -> Result<Worker, Error> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("scriptorium-session-pg".into())
            .spawn(move || {
                let mut conn = Conn { config, tls, client: None, statements: HashMap::new() };
                for job in inbox {
                    job(&mut conn);
                }
            })
            .map_err(|e| Error::Database {
                message: format!("cannot start the connection thread: {e}"),
                retryable: true,
            })?;
        Ok(Worker { jobs: Some(jobs), thread: Some(thread) })
    }

    /// Runs `job` on the connection and returns its result.
    pub(crate) fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Conn) -> Result<R, Error> + Send + 'static,
    ) -> Result<R, Error> {
        self.submit(job)?.recv().map_err(|_| gone())?
    }

    /// Runs `job` on the connection as [`Worker::run`] does, answering on the calling thread
    /// every question it asks through its [`Asker`] with `answer`: work that cannot leave the
    /// caller's thread (a borrowed closure) done in the middle of the job, say inside its
    /// transaction. When `answer` panics, the job's question fails (and the job with it).
    pub(crate) fn run_asking<Q: Send + 'static, A: Send + 'static, R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Conn, &Asker<Q, A>) -> Result<R, Error> + Send + 'static,
        answer: &mut dyn FnMut(Q) -> A,
    ) -> Result<R, Error> {
        let (questions, asked) = mpsc::channel();
        let (answers, answered) = mpsc::channel();
        let asker = Asker { questions, answers: answered };
        let result = self.submit(move |conn| {
            let result = job(conn, &asker);
            // Ends the caller's loop below.
            drop(asker);
            result
        })?;
        for question in asked {
            if answers.send(answer(question)).is_err() {
                break;
            }
        }
        result.recv().map_err(|_| gone())?
    }

    /// Queues `job`; its result comes on the returned channel.
    fn submit<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Conn) -> Result<R, Error> + Send + 'static,
    ) -> Result<mpsc::Receiver<Result<R, Error>>, Error> {
        let (reply, answer) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |conn| {
            // The caller may have gone (it cannot: it waits); a failed send only drops `R`.
            let _ = reply.send(job(conn));
        });
        self.jobs.as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        Ok(answer)
    }
}

fn gone() -> Error {
    Error::Database { message: "the connection thread stopped".into(), retryable: false }
}

/// How a job of [`Worker::run_asking`] asks the calling thread a question.
pub(crate) struct Asker<Q, A> {
    questions: mpsc::Sender<Q>,
    answers: mpsc::Receiver<A>,
}

impl<Q, A> Asker<Q, A> {
    /// The calling thread's answer to `question`; an error when the caller stopped answering
    /// (its `answer` panicked).
    pub(crate) fn ask(&self, question: Q) -> Result<A, Error> {
        let stopped = || Error::Database {
            message: "the caller stopped answering the connection thread".into(),
            retryable: false,
        };
        self.questions.send(question).map_err(|_| stopped())?;
        self.answers.recv().map_err(|_| stopped())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the queue ends the worker's loop; the connection closes with it.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
