//! Pooled connections with their prepared statements.
//!
//! The `postgres` client prepares a statement given as text on every call: one round trip to
//! parse it, another to run it. Each pooled connection keeps the statements it prepared, by
//! their SQL text, so a store method's statements are parsed once per connection and every
//! later call runs them in one round trip. A prepared statement belongs to the connection's
//! session, not to a transaction: a rollback keeps it.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};
use r2d2_postgres::PostgresConnectionManager;

use crate::error::Result;

/// Statements kept per connection before the cache starts over. The store's fixed SQL is
/// about a hundred statements; visibility filters build one per filter shape.
const MAX_CACHED_STATEMENTS: usize = 256;

/// A query parameter.
pub(super) type Arg<'a> = &'a (dyn ToSql + Sync);

/// The statements a connection prepared, by SQL text.
#[derive(Default)]
pub(super) struct Statements(HashMap<String, Statement>);

impl Statements {
    fn get(&mut self, client: &mut impl GenericClient, sql: &str) -> Result<Statement> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        if self.0.len() >= MAX_CACHED_STATEMENTS {
            self.0.clear();
        }
        self.0.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// One pooled connection.
pub(super) struct Connection {
    pub(super) client: Client,
    statements: Statements,
}

impl Connection {
    /// Runs `body` in a transaction of this connection and commits it; an error rolls back.
    pub(super) fn in_transaction<T>(
        &mut self,
        body: &mut impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut tx = Tx {
            tx: self.client.transaction()?,
            statements: &mut self.statements,
        };
        let value = body(&mut tx)?;
        tx.tx.commit()?;
        Ok(value)
    }

    /// The connection for reads outside an explicit transaction.
    pub(super) fn session(&mut self) -> Session<'_> {
        Session {
            client: &mut self.client,
            statements: &mut self.statements,
        }
    }
}

/// The pool's connection manager: `r2d2_postgres`'s, with a statement cache per connection.
pub(super) struct Manager(pub(super) PostgresConnectionManager<NoTls>);

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = postgres::Error;

    fn connect(&self) -> std::result::Result<Connection, postgres::Error> {
        Ok(Connection {
            client: self.0.connect()?,
            statements: Statements::default(),
        })
    }

    fn is_valid(&self, connection: &mut Connection) -> std::result::Result<(), postgres::Error> {
        self.0.is_valid(&mut connection.client)
    }

    fn has_broken(&self, connection: &mut Connection) -> bool {
        self.0.has_broken(&mut connection.client)
    }
}

/// What the store's SQL runs on: a write's transaction ([`Tx`]) or a read's connection
/// ([`Session`]). Statements given as text are prepared once per connection.
pub(super) trait Sql {
    fn query(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Vec<Row>>;
    fn query_opt(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Option<Row>>;
}

/// Implements [`Sql`] (and the same methods inherently, so callers need no import) for a
/// type whose `parts()` lends its client and its statement cache.
macro_rules! cached_sql {
    ($type:ident) => {
        impl $type<'_> {
            pub(super) fn query(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Vec<Row>> {
                let (client, statements) = self.parts();
                let statement = statements.get(client, sql)?;
                Ok(client.query(&statement, params)?)
            }

            pub(super) fn query_opt(
                &mut self,
                sql: &str,
                params: &[Arg<'_>],
            ) -> Result<Option<Row>> {
                let (client, statements) = self.parts();
                let statement = statements.get(client, sql)?;
                Ok(client.query_opt(&statement, params)?)
            }

            pub(super) fn query_one(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Row> {
                let (client, statements) = self.parts();
                let statement = statements.get(client, sql)?;
                Ok(client.query_one(&statement, params)?)
            }

            /// Runs SQL text of several statements without parameters, uncached.
            pub(super) fn batch_execute(&mut self, sql: &str) -> Result<()> {
                Ok(self.parts().0.batch_execute(sql)?)
            }
        }

        impl Sql for $type<'_> {
            fn query(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Vec<Row>> {
                $type::query(self, sql, params)
            }
            fn query_opt(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<Option<Row>> {
                $type::query_opt(self, sql, params)
            }
        }
    };
}

/// A write's transaction.
pub(super) struct Tx<'a> {
    tx: Transaction<'a>,
    statements: &'a mut Statements,
}

impl<'a> Tx<'a> {
    fn parts(&mut self) -> (&mut Transaction<'a>, &mut Statements) {
        (&mut self.tx, self.statements)
    }

    /// Runs a statement that returns no rows; how many rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[Arg<'_>]) -> Result<u64> {
        let (client, statements) = self.parts();
        let statement = statements.get(client, sql)?;
        Ok(client.execute(&statement, params)?)
    }
}

cached_sql!(Tx);

/// A connection for reads; each statement sees what was committed when it started.
pub(super) struct Session<'a> {
    pub(super) client: &'a mut Client,
    statements: &'a mut Statements,
}

impl Session<'_> {
    fn parts(&mut self) -> (&mut Client, &mut Statements) {
        (self.client, self.statements)
    }
}

cached_sql!(Session);
