/// A Markdown table, its columns padded to the terminal width of their text (CJK and
/// emoji take two columns, combining marks none).
enum Table {
    static func render(header: [String], rows: [[String]]) -> String {
        // Each cell's width once: a query's table can have a row per stored object.
        let cellWidths = ([header] + rows).map { $0.map(displayWidth) }
        let widths = header.indices.map { column in cellWidths.map { $0[column] }.max() ?? 0 }
        // Columns of numbers line up on the right; text lines up on the left.
        let numeric = header.indices.map { column in
            column > 0 && !rows.isEmpty && rows.allSatisfy { row in
                row[column].allSatisfy { $0.isNumber || ".,%×-+ ".contains($0) } || row[column].hasSuffix("B") || row[column] == "NULL"
            }
        }
        func line(_ row: Int) -> String {
            let cells = row == 0 ? header : rows[row - 1]
            return "| " + cells.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cellWidths[row][column])
                return numeric[column] ? pad + cell : cell + pad
            }.joined(separator: " | ") + " |"
        }
        let rule = "|" + widths.enumerated().map { column, width in
            numeric[column] ? String(repeating: "-", count: width + 1) + ":" : String(repeating: "-", count: width + 2)
        }.joined(separator: "|") + "|"
        return ([line(0), rule] + rows.indices.map { line($0 + 1) }).joined(separator: "\n")
    }

    /// Columns `text` takes in a terminal, per character (grapheme cluster).
    static func displayWidth(_ text: String) -> Int {
        // Printable ASCII, most cells, takes a column a byte: no need to ask Unicode's tables.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        return text.reduce(0) { $0 + width(of: $1) }
    }

    private static func width(of character: Character) -> Int {
        var width = 0
        for scalar in character.unicodeScalars {
            let properties = scalar.properties
            if properties.isEmojiPresentation || isWide(scalar.value) { return 2 }
            switch properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format, .control: continue
            default: width = 1
            }
        }
        return width
    }

    /// East Asian Wide and Fullwidth ranges (Unicode's EastAsianWidth.txt, the blocks that matter).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x20000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
