//! Values as text for errors and reports: the forms a user reads in place of Rust's
//! `Debug` output.

/// A tensor shape as text, `(1, 256, 24, 24)`; a scalar's shape is `()`.
pub fn dims(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_reads_as_a_parenthesised_list() {
        assert_eq!(dims(&[1, 256, 24, 24]), "(1, 256, 24, 24)");
        assert_eq!(dims(&[7]), "(7)");
        assert_eq!(dims(&[]), "()");
    }
}
