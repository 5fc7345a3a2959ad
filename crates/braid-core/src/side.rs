//! Which end of a session we are: the one vocabulary word every layer (streams, session,
//! endpoint) needs, kept at the crate root so none of them imports another for it.

/// Which end of the session we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Opens the session and its paths.
    Client,
    /// Admits clients and answers.
    Server,
}
