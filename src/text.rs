//! Values as text for errors and reports: the forms a user reads in place of Rust's
//! `Debug` output.

/// A tensor shape as text, `(1, 256, 24, 24)`; a scalar's shape is `()`. Symbolic
/// dimensions (tract's `TDim`) keep their names: `(1, S, 256)`.
pub fn dims<D: std::fmt::Display>(shape: &[D]) -> String {
    let parts: Vec<String> = shape.iter().map(D::to_string).collect();
    format!("({})", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_reads_as_a_parenthesised_list() {
        assert_eq!(dims(&[1, 256, 24, 24]), "(1, 256, 24, 24)");
        assert_eq!(dims(&[7]), "(7)");
        assert_eq!(dims::<usize>(&[]), "()");
        assert_eq!(dims(&["1", "S", "256"]), "(1, S, 256)");
    }
}
