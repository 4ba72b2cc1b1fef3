//! `soif stats` end to end, and the CIP-HINT object of RFC 2655 Appendix B.

use crate::common;
use common::*;

fn documents() -> String {
    fixture("rfc2655/documents.soif").display().to_string()
}

#[test]
fn table_of_templates_and_attributes() {
    let out = run(&["stats", &documents()], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("3 records, 1 templates, "), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("DOCUMENT") && l.contains(" Content-Type "))
        .unwrap_or_else(|| panic!("{text}"));
    // Content-Type in all three documents: 9 + 9 + 10 bytes, the largest 10.
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        ["DOCUMENT", "Content-Type", "3", "100.0%", "28", "10"]
    );
}

#[test]
fn json_report() {
    let out = run(&["stats", &documents(), "--json", "-q"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["records"], 3);
    assert_eq!(v["rejected"], 0);
    let doc = &v["templates"]["DOCUMENT"];
    assert_eq!(doc["records"], 3);
    assert_eq!(doc["attributes"]["Abstract"]["bytes"], 312);
    assert_eq!(doc["attributes"]["Author-2"]["count"], 1);
}

/// RFC 2655 App. B: "Each Weightlist entry takes the form of Value;Object-Count, where
/// the object count is a positive integer representing the number of objects within the
/// collection which contain that value. Weightlists are comma-delimited. Should a Value
/// contain a comma, it should be escaped when incorporated into the weightlist."
#[test]
fn cip_hint_on_the_rfc_examples() {
    // The RFC's own hint lists "Aldrin\, Buzz;15": authors with commas.
    let mut input = std::fs::read(fixture("rfc2655/documents.soif")).unwrap();
    input.extend_from_slice(
        b"@DOCUMENT { http://nasa/1\nAuthor{12}:\tAldrin, Buzz\nKeywords{4}:\tmoon\n}\n\
          @DOCUMENT { http://nasa/2\nAuthor-1{12}:\tAldrin, Buzz\nAuthor-2{14}:\tAlan O. Freier\n}\n\
          @IMAGE { http://nasa/3\nSubject{7}:\tShuttle\n}\n",
    );
    let out = run(
        &[
            "stats",
            "--cip-hint",
            "DOCUMENT:Author,DOCUMENT:Keywords,IMAGE:Subject",
            "--cip-url",
            "http://nic.nasa.gov:80/Harvest/brokers/NASA/",
            "--cip-source",
            "http://nic.nasa.gov/Harvest/gatherers/Eureka/",
        ],
        &input,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let hint = stdout(&out);
    assert!(
        hint.starts_with("@CIP-HINT { http://nic.nasa.gov:80/Harvest/brokers/NASA/\n"),
        "{hint}"
    );
    assert!(
        hint.contains(
            "Attribute-Identifier-List{49}:\tDOCUMENT:Author, DOCUMENT:Keywords, IMAGE:Subject\n"
        ),
        "{hint}"
    );
    assert!(
        hint.contains("Source{45}:\thttp://nic.nasa.gov/Harvest/gatherers/Eureka/\n"),
        "{hint}"
    );
    assert!(hint.contains("Total-Object-Count{1}:\t6\n"), "{hint}");
    // Author, Author-1… all count (RFC 2655 §4), most frequent first, commas escaped.
    let authors = "Alan O. Freier;2, Aldrin\\, Buzz;2, Paul C. Kocher;1, Philip Karlton;1";
    assert!(
        hint.contains(&format!(
            "Weightlist-[DOCUMENT:Author]{{{}}}:\t{authors}\n",
            authors.len()
        )),
        "{hint}"
    );
    assert!(
        hint.contains("Weightlist-[DOCUMENT:Keywords]{6}:\tmoon;1\n"),
        "{hint}"
    );
    assert!(
        hint.contains("Weightlist-[IMAGE:Subject]{9}:\tShuttle;1\n"),
        "{hint}"
    );
    assert!(hint.contains("\nDate{29}:\t"), "{hint}");
    // The hint is itself SOIF that soif reads back.
    let back = run(&["convert", "--to", "jsonl", "-q"], hint.as_bytes());
    assert_eq!(code(&back), 0, "{}", stderr(&back));

    // A threshold leaves out the rare values and is declared.
    let out = run(
        &[
            "stats",
            "--cip-hint",
            "DOCUMENT:Author",
            "--threshold",
            "2",
            "-q",
        ],
        &input,
    );
    let hint = stdout(&out);
    assert!(
        hint.contains("Weightlist-[DOCUMENT:Author]{33}:\tAlan O. Freier;2, Aldrin\\, Buzz;2\n"),
        "{hint}"
    );
    assert!(
        hint.contains("Threshold-[DOCUMENT:Author]{1}:\t2\n"),
        "{hint}"
    );

    let out = run(&["stats", "--cip-hint", "Author"], &input);
    assert_eq!(code(&out), 2);
}

#[test]
fn cip_hint_memory_is_bounded_and_says_so() {
    // 50 distinct authors once each, one author everywhere; only 8 values may be kept.
    let mut input = Vec::new();
    for i in 0..50 {
        let a = format!("Author {i:02}");
        input.extend_from_slice(
            format!(
                "@DOCUMENT {{ http://x/{i}\nAuthor-1{{{}}}:\t{a}\nAuthor-2{{4}}:\tBoss\n}}\n",
                a.len()
            )
            .as_bytes(),
        );
    }
    let out = run(
        &[
            "stats",
            "--cip-hint",
            "DOCUMENT:Author",
            "--max-values",
            "8",
            "-q",
        ],
        &input,
    );
    assert_eq!(code(&out), 0);
    let hint = stdout(&out);
    assert!(hint.contains("Boss;50"), "{hint}");
    assert!(hint.contains("Threshold-[DOCUMENT:Author]"), "{hint}");
}

#[test]
fn stats_help_and_bad_input() {
    let help = stdout(&run(&["stats", "--help"], b""));
    for flag in [
        "--json",
        "--cip-hint",
        "--threshold",
        "--max-values",
        "--on-error",
        "Weightlist",
    ] {
        assert!(help.contains(flag), "stats --help lacks {flag}");
    }
    let out = run(
        &["stats", "--on-error", "skip", "-q"],
        b"@A { -\nX{z}:\t1\n}\n@B { -\n}\n",
    );
    assert_eq!(code(&out), 3);
    assert!(stdout(&out).starts_with("1 records"), "{}", stdout(&out));
}
