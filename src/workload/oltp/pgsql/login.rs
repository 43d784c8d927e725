//! The PostgreSQL login: the startup message and the authentication the
//! server asks for (trust, password, MD5 or SCRAM-SHA-256), refused before
//! anything is sent when it is weaker than `--pgsql-auth` allows, the whole
//! login under one deadline.

use std::io;

use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use bytes::BytesMut;

use super::{broken, open, server_error, Limits, Pg, Wait};
use crate::workload::oltp::driver::DbError;
use crate::workload::oltp::driver::{Rows, TextMap};

impl Pg {
    /// A connection and its login, the failure left for the caller to word
    /// (it knows which options named the server): the OLTP workload and
    /// the results store (`store::pg`) share this client.
    pub fn logon(login: &Logon, prepared: bool, auth: Auth, limits: Limits) -> Result<Pg, Refusal> {
        let stream =
            open(login.host, login.port).map_err(|e| Refusal::Unreachable(e.to_string()))?;
        let mut pg = Pg {
            stream,
            input: BytesMut::with_capacity(16384),
            output: BytesMut::with_capacity(1024),
            chunk: Box::new([0; 16384]),
            prepared,
            statements: TextMap::default(),
            wait: Wait::start(limits.login),
            limits,
            answered: 0,
            spare: Rows::default(),
            error_position: None,
        };
        match pg.login(login.user, login.password, login.db, auth) {
            Ok(()) => Ok(pg),
            Err(Login::Weaker(asked)) => Err(Refusal::Weaker(asked)),
            Err(Login::Io(e)) => Err(Refusal::Unreachable(e.to_string())),
            Err(Login::Refused(e)) => Err(Refusal::Refused(e)),
        }
    }

    /// The startup message and authentication (trust, password, MD5 or
    /// SCRAM-SHA-256), up to the first ReadyForQuery.
    pub(super) fn login(
        &mut self,
        user: &str,
        password: &str,
        db: &str,
        auth: Auth,
    ) -> Result<(), Login> {
        let params = [
            ("user", user),
            ("database", db),
            ("application_name", "virtperf"),
            ("client_encoding", "UTF8"),
        ];
        self.begin_wait(self.limits.login);
        frontend::startup_message(params.iter().copied(), &mut self.output)?;
        self.flush()?;
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.message()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword if auth > Auth::Password => {
                    return Err(Login::Weaker("in clear"));
                }
                Message::AuthenticationMd5Password(_) if auth > Auth::Md5 => {
                    return Err(Login::Weaker("as MD5"));
                }
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password.as_bytes(), &mut self.output)?;
                    self.flush()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(user.as_bytes(), password.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.output)?;
                    self.flush()?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut offered = body.mechanisms();
                    let mut scram_offered = false;
                    while let Some(m) = offered.next()? {
                        scram_offered |= m == SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(broken("the server offers no SASL mechanism but SCRAM-SHA-256-PLUS, which needs TLS").into());
                    }
                    let s = ScramSha256::new(password.as_bytes(), ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.output)?;
                    self.flush()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| broken("SASL continue before SASL"))?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.output)?;
                    self.flush()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    scram
                        .as_mut()
                        .ok_or_else(|| broken("SASL final before SASL"))?
                        .finish(body.data())?;
                }
                Message::ErrorResponse(body) => return Err(Login::Refused(server_error(&body))),
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => {}
                _ => {
                    return Err(broken(
                        "the server asked for an authentication method virtperf does not speak (GSS, SSPI or Kerberos); use password, md5 or scram-sha-256",
                    )
                    .into())
                }
            }
        }
    }
}

/// Where and as whom a connection logs in.
pub struct Logon<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    pub db: &'a str,
}

/// Why a connection did not open: the caller words it with its options.
#[derive(Debug)]
pub enum Refusal {
    /// No connection, or it broke during the login.
    Unreachable(String),
    /// The server asked for the password in a way `auth` forbids (nothing
    /// was sent).
    Weaker(&'static str),
    /// The server refused the user or the database.
    Refused(DbError),
}

pub(super) enum Login {
    Io(io::Error),
    Refused(DbError),
    /// The server asked for the password in a way `--pgsql-auth` forbids.
    Weaker(&'static str),
}

/// The weakest way the client sends a password (`--pgsql-auth`), weakest
/// first: a server that asks for less is refused before it gets anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Auth {
    /// Also in clear, as the server asks: anyone who runs a server where
    /// --pgsql-host points, or reads the network, has it.
    Password,
    /// MD5 (a salted hash, replayable within the salt) or SCRAM.
    Md5,
    /// SCRAM-SHA-256 only.
    Scram,
}

impl Auth {
    pub const CHOICES: &'static [&'static str] = &["scram-sha-256", "md5", "password"];

    pub fn parse(word: &str) -> Auth {
        match word {
            "password" => Auth::Password,
            "scram-sha-256" => Auth::Scram,
            _ => Auth::Md5,
        }
    }
}

impl From<io::Error> for Login {
    fn from(e: io::Error) -> Login {
        Login::Io(e)
    }
}
