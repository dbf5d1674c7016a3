//! The one text-table writer of the command line (`tools list`, `query`,
//! `lint --statistics`, `eval`).
//!
//! A column is as wide as its widest cell or header, kept within its
//! `min..=max`; a cell longer than `max` overflows rather than being cut.
//! Cells are padded by characters. A left-aligned last column is not padded,
//! so no line ends in spaces.

use std::io::Write;

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left (numbers).
    Right,
}

/// One column: its header, alignment and width bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column<'a> {
    /// The header text.
    pub header: &'a str,
    /// The alignment of the header and the cells.
    pub align: Align,
    /// The narrowest the column gets.
    pub min: usize,
    /// The widest the column gets from its content.
    pub max: usize,
}

impl<'a> Column<'a> {
    /// A left-aligned column as wide as its content.
    pub fn left(header: &'a str) -> Column<'a> {
        Column {
            header,
            align: Align::Left,
            min: 0,
            max: usize::MAX,
        }
    }

    /// A right-aligned column as wide as its content.
    pub fn right(header: &'a str) -> Column<'a> {
        Column {
            align: Align::Right,
            ..Column::left(header)
        }
    }

    /// The same column with its width kept within `min..=max`.
    pub fn within(self, min: usize, max: usize) -> Column<'a> {
        Column { min, max, ..self }
    }

    /// The same column, exactly `width` wide (unless a cell is longer).
    pub fn fixed(self, width: usize) -> Column<'a> {
        self.within(width, width)
    }
}

/// Writes the header line, then one line per row, cells joined by `sep`.
pub fn write_table(
    out: &mut dyn Write,
    columns: &[Column<'_>],
    sep: &str,
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let content = rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|cell| cell.chars().count())
                .chain([c.header.chars().count()])
                .max()
                .unwrap_or(0);
            content.clamp(c.min, c.max.max(c.min))
        })
        .collect();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| -> std::io::Result<()> {
        let mut s = String::new();
        let last = columns.len().saturating_sub(1);
        for (i, ((cell, col), w)) in cells.zip(columns).zip(&widths).enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            match col.align {
                Align::Left if i == last => s.push_str(cell),
                Align::Left => s.push_str(&format!("{cell:<w$}")),
                Align::Right => s.push_str(&format!("{cell:>w$}")),
            }
        }
        writeln!(out, "{s}")
    };
    line(&mut columns.iter().map(|c| c.header))?;
    for row in rows {
        line(&mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(columns: &[Column<'_>], sep: &str, rows: &[&[&str]]) -> String {
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect();
        let mut out = Vec::new();
        write_table(&mut out, columns, sep, &rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn widths_alignment_and_no_trailing_spaces() {
        let cols = [
            Column::left("ID").within(2, 6),
            Column::right("N"),
            Column::left("SUMMARY"),
        ];
        let t = table(
            &cols,
            "  ",
            &[&["a/b", "7", "one"], &["a/very_long", "12", "two"]],
        );
        assert_eq!(
            t,
            "ID       N  SUMMARY\n\
             a/b      7  one\n\
             a/very_long  12  two\n"
        );
    }

    #[test]
    fn fixed_and_right_aligned_last_column() {
        let cols = [
            Column::left("CODE").fixed(6),
            Column::right("TOOLS").fixed(6),
        ];
        let t = table(&cols, " ", &[&["TR001", "3"]]);
        assert_eq!(t, "CODE    TOOLS\nTR001       3\n");
    }

    #[test]
    fn characters_not_bytes() {
        let t = table(
            &[Column::left("X"), Column::right("Y")],
            " ",
            &[&["é", "1"]],
        );
        assert_eq!(t, "X Y\né 1\n");
    }
}
