//! SAI's text analyzer (Cassandra's `NonTokenizingAnalyzer`): how an index
//! with `case_sensitive: false`, `normalize: true` or `ascii: true`
//! compares text. The indexed values, the values looked up and an `=`
//! restriction checked on a row all go through the same steps, in
//! Cassandra's order: lower case, Unicode NFC, ASCII folding.

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::UnicodeNormalization;

use super::{family, IndexFamily};
use crate::schema::Index;

/// The analysis an SAI index applies to text values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Analyzer {
    fold_case: bool,
    normalize: bool,
    ascii: bool,
}

impl Analyzer {
    /// The analyzer `index` names, if it analyzes.
    pub fn of(index: &Index) -> Option<Analyzer> {
        if family(index) != Some(IndexFamily::Sai) {
            return None;
        }
        let option = |name: &str| {
            index
                .options
                .get(name)
                .map(|v| v.eq_ignore_ascii_case("true"))
        };
        let analyzer = Analyzer {
            fold_case: option("case_sensitive") == Some(false),
            normalize: option("normalize") == Some(true),
            ascii: option("ascii") == Some(true),
        };
        (analyzer.fold_case || analyzer.normalize || analyzer.ascii).then_some(analyzer)
    }

    /// The analyzed form of a text value (bytes that are not UTF-8 unchanged).
    pub fn apply(&self, value: &[u8]) -> Vec<u8> {
        let Ok(text) = std::str::from_utf8(value) else {
            return value.to_vec();
        };
        let mut text = text.to_string();
        if self.fold_case {
            text = text.to_lowercase();
        }
        if self.normalize {
            text = text.nfc().collect();
        }
        if self.ascii {
            text = fold_to_ascii(&text);
        }
        text.into_bytes()
    }

    /// Whether two values are equal once analyzed.
    pub fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        self.apply(a) == self.apply(b)
    }
}

/// Lucene's ASCII folding as SAI's `ascii` option applies it: a letter with
/// diacritics becomes its base letter (`é` -> `e`), ligatures and letters
/// of their own become their ASCII spelling (`ß` -> `ss`, `æ` -> `ae`),
/// typographic punctuation its ASCII form; what has no ASCII form stays.
pub fn fold_to_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else if let Some(spelled) = ascii_spelling(c) {
            out.push_str(spelled);
        } else {
            match base_letters(c) {
                Some(base) => out.push_str(&base),
                None => out.push(c),
            }
        }
    }
    out
}

/// The ASCII form of `c` by decomposition, when it is ASCII letters (or
/// digits, or punctuation) followed only by combining marks.
fn base_letters(c: char) -> Option<String> {
    let mut base = String::new();
    let mut all_ascii = true;
    decompose_compatible(c, |d| {
        if d.is_ascii() {
            base.push(d);
        } else if canonical_combining_class(d) == 0 {
            all_ascii = false;
        }
    });
    (all_ascii && !base.is_empty()).then_some(base)
}

/// Characters without a decomposition that Lucene folds all the same.
fn ascii_spelling(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'Æ' => "AE",
        'æ' => "ae",
        'Ð' | 'Đ' => "D",
        'ð' | 'đ' => "d",
        'Ø' => "O",
        'ø' => "o",
        'Þ' => "TH",
        'þ' => "th",
        'Œ' => "OE",
        'œ' => "oe",
        'Ħ' => "H",
        'ħ' => "h",
        'ı' => "i",
        'Ł' => "L",
        'ł' => "l",
        'ĸ' => "q",
        'Ŋ' => "N",
        'ŋ' => "n",
        'Ŧ' => "T",
        'ŧ' => "t",
        'ſ' => "s",
        'ƒ' => "f",
        '‘' | '’' | '‚' | '‛' | '′' => "'",
        '“' | '”' | '„' | '‟' | '″' | '«' | '»' => "\"",
        '‐' | '‑' | '‒' | '–' | '—' | '−' => "-",
        '…' => "...",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyzer(fold_case: bool, normalize: bool, ascii: bool) -> Analyzer {
        Analyzer {
            fold_case,
            normalize,
            ascii,
        }
    }

    fn applied(analyzer: Analyzer, text: &str) -> String {
        String::from_utf8(analyzer.apply(text.as_bytes())).expect("UTF-8 in, UTF-8 out")
    }

    #[test]
    fn steps_apply_in_cassandras_order() {
        let decomposed = "Cafe\u{301}";
        assert_eq!(applied(analyzer(true, false, false), "STRAßE"), "straße");
        assert_eq!(
            applied(analyzer(false, true, false), decomposed),
            "Caf\u{e9}"
        );
        assert_eq!(applied(analyzer(false, false, true), "Caf\u{e9}"), "Cafe");
        assert_eq!(applied(analyzer(true, true, true), decomposed), "cafe");
        assert_eq!(
            applied(analyzer(false, false, false), decomposed),
            decomposed
        );
    }

    #[test]
    fn ascii_folding_keeps_what_has_no_ascii_form() {
        assert_eq!(fold_to_ascii("Ærøskøbing"), "AEroskobing");
        assert_eq!(fold_to_ascii("Straße – “ok”"), "Strasse - \"ok\"");
        assert_eq!(fold_to_ascii("ǅ ﬁ ²"), "Dz fi 2");
        assert_eq!(fold_to_ascii("東京 Ωμέγα"), "東京 Ωμέγα");
    }
}
