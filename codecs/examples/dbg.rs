use soif_codecs::soif::{decode_all, DecoderOptions};
fn main() {
    let input = std::fs::read(std::env::args().nth(1).unwrap()).unwrap();
    let lenient = std::env::args().nth(2).is_some();
    let mut o = DecoderOptions::default();
    if lenient {
        o = o.lenient();
    }
    for it in decode_all(&input, o) {
        match it {
            Ok(r) => println!(
                "OK {:?} {} {:?} attrs={:?} repairs={:?}",
                r.template,
                r.url_str(),
                r.action,
                r.attributes
                    .iter()
                    .map(|a| (
                        String::from_utf8_lossy(&a.name).into_owned(),
                        a.value
                            .as_bytes()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                    ))
                    .collect::<Vec<_>>(),
                r.repairs.iter().map(|r| &r.message).collect::<Vec<_>>()
            ),
            Err(e) => println!(
                "ERR {} closes={} raw={:?}",
                e,
                e.closes_envelope(),
                e.raw().map(|r| String::from_utf8_lossy(r).into_owned())
            ),
        }
    }
}
