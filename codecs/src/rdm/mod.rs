//! RDM (W3C NOTE-rdm-960724) objects as typed structs.
