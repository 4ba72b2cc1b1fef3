//! The subcommands, one module each. To add one: a module here, a variant in
//! [`crate::Command`] and an arm in `main`'s dispatch. What several share lives beside
//! this folder: [`crate::input`] (reading records), [`crate::job`] (running a conversion,
//! incremental or not), [`crate::terminal`] (the reporter, exit statuses).

pub mod convert;
pub mod rdm;
pub mod run;
pub mod serve;
pub mod split;
pub mod state;
pub mod stats;
pub mod test;
pub mod r#try;
pub mod validate;
pub mod verify;
