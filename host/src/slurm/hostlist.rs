//! Slurm hostlists (`n[1-3,7],gpu-[01-02]`) expanded into node names, by the
//! `hostlist-parser` crate (strict: trailing garbage is an error, not ignored).

/// The node names of a hostlist, in its order; an empty list for `""`.
pub fn expand(list: &str) -> Result<Vec<String>, String> {
    let list = list.trim();
    if list.is_empty() || list == "(null)" {
        return Ok(Vec::new());
    }
    hostlist_parser::parse(list).map_err(|e| {
        format!(
            "{list:?} is not a hostlist: {}",
            e.to_string().replace('\n', " ").trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_lists_and_padding() {
        let cases: [(&str, &[&str]); 5] = [
            ("", &[]),
            ("n2", &["n2"]),
            ("n[1,3]", &["n1", "n3"]),
            ("n[1-2],gpu-[09-10]", &["n1", "n2", "gpu-09", "gpu-10"]),
            ("n1,n3", &["n1", "n3"]),
        ];
        for (list, expected) in cases {
            assert_eq!(expand(list).unwrap(), expected, "{list}");
        }
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in ["n[3-", "n[1-2]]x"] {
            let err = expand(bad).unwrap_err();
            assert!(err.contains("is not a hostlist"), "{bad}: {err}");
        }
    }
}
