import Foundation

extension PostgresBatchWriter {
    /// What the writer remembers of a stored object others link to: its row number, and a
    /// hash of the fields and links it last wrote there (nil: not known to be this writer's).
    struct Known {
        var pk: Int64
        var content: Int?
        /// The writer's `contentGeneration` when `content` was learnt: from another one, it is not trusted.
        var generation: UInt32 = 0
        /// Whether the object may still be a placeholder (named by key, never described). Only
        /// `true` can go stale (another writer filled it): the fill's UPDATE checks the row.
        var mayBePlaceholder = false
    }

    /// One stored object a request writes: the rows of its key folded in record order.
    /// Plain values: its cells, once a later row changed them, and its links and mask live
    /// in the entity's `EntityBatch`, so that copying or sorting entries costs no reference
    /// counting.
    struct Folded {
        /// `u`: the key is stored (an UPDATE by the mask); `i`: it is new (an INSERT).
        var op: UInt8
        /// The first record (index in the request) that names it.
        var record: Int
        /// Where its cells are: its first row's in the request, or, once a later row of its
        /// key changed them (`refolded`), its own copy in the batch's `refoldedCells` (most
        /// keys come once: their cells are never copied).
        var firstCell: Int
        var cellCount: Int
        var refolded = false
        /// Its key's slot in the entity's `EntityBatch` (-1: no key).
        var slot: Int32
        /// Its row number: the stored one, or one reserved for it.
        var pk: Int64 = 0
        /// A row describes the placeholder stored under its key: the UPDATE must unmark it even
        /// when the row gives nothing but its key (as SQLite's upsert does).
        var fills = false
        /// For lineage: the UPDATE round it goes in (0, or one after the stored key's entry
        /// before it), so that each row of a stored key meets the row as the rows before it left it.
        var round: Int32 = 0

        init(op: UInt8, record: Int, firstCell: Int, cellCount: Int, slot: Int32) {
            (self.op, self.record, self.firstCell, self.cellCount, self.slot) = (op, record, firstCell, cellCount, slot)
        }
    }

    /// One entity's keys in a request, each with a slot: given the first time a row names
    /// it (one hash lookup a row). Made by `stage`, on the worker's mapping thread; a write
    /// only reads it.
    struct KeySlots: Sendable {
        private(set) var slotOf: [TextKey: Int32] = [:]
        /// By slot.
        private(set) var keys: [TextKey] = []

        init(rows: Int) {
            // Sized once: growing a dictionary rehashes every key in it.
            slotOf.reserveCapacity(rows)
            keys.reserveCapacity(rows)
        }

        /// The slot of `key`, given it now when it has none.
        mutating func slot(for key: TextKey) -> Int32 {
            let next = Int32(keys.count)
            var isNew = false
            let slot = { (value: inout Int32) -> Int32 in
                if value < 0 {
                    value = next
                    isNew = true
                }
                return value
            }(&slotOf[key, default: -1])
            if isNew { keys.append(key) }
            return slot
        }
    }

    /// One entity's part of a write: its key slots (`KeySlots`), and what the write learns
    /// of each key (stored or not, its entry, what the writer remembered) in arrays by slot.
    struct EntityBatch {
        let slots: KeySlots
        var slotOf: [TextKey: Int32] { slots.slotOf }
        /// By slot.
        var keys: [TextKey] { slots.keys }
        /// By slot: the stored row number, when the key is stored (remembered or looked up).
        var stored: [Int64?]
        /// By slot: what the writer remembered of the key before this request.
        var remembered: [Known?]
        /// By slot: the key's entry in `folded`, or -1.
        var foldedAt: [Int32]
        /// By slot: the object is (or may be) a placeholder no row of the request described
        /// yet: the first that does fills it, whatever the rule.
        var placeholder: [Bool]
        var folded: [Folded] = []
        /// The cells of entries a later row changed (`Folded.refolded`), `cellCount` each.
        var refoldedCells: [BatchInsertRequest.Cell] = []
        /// By entry: its to-ones' destination slots (-1: none), `linkCount` each.
        var links: [Int32] = []
        /// By entry: the bits (attributes, then to-ones) an UPDATE writes, `maskWords` each;
        /// for `i`, every bit.
        var masks: [UInt64] = []
        let linkCount: Int
        let maskWords: Int

        init(slots: KeySlots, rows: Int, linkCount: Int, maskWords: Int) {
            self.slots = slots
            self.linkCount = linkCount
            self.maskWords = maskWords
            stored = Array(repeating: nil, count: slots.keys.count)
            remembered = Array(repeating: nil, count: slots.keys.count)
            foldedAt = Array(repeating: -1, count: slots.keys.count)
            placeholder = Array(repeating: false, count: slots.keys.count)
            guard rows > 0 else { return }
            folded.reserveCapacity(rows)
            links.reserveCapacity(rows * linkCount)
            masks.reserveCapacity(rows * maskWords)
        }

        /// Adds an entry for `row` of `request`, its links the slots of the rows it links to
        /// (`rowSlot`), and a mask of the first `bits` bits (an insert's: every attribute and
        /// to-one) or of none; returns its index.
        mutating func append(_ entry: Folded, row: BatchInsertRequest.Row, _ request: BatchInsertRequest, rowSlot: [Int32],
                             maskBits bits: Int) -> Int {
            folded.append(entry)
            for number in 0..<linkCount {
                let target = Int(request.links[row.firstLink + number])
                links.append(target < 0 ? -1 : rowSlot[target])
            }
            for word in 0..<maskWords {
                let left = bits - word * 64
                masks.append(left >= 64 ? .max : (left <= 0 ? 0 : (1 << UInt64(left)) - 1))
            }
            if entry.slot >= 0 { foldedAt[Int(entry.slot)] = Int32(folded.count - 1) }
            return folded.count - 1
        }

        /// Cell `position` of entry `index`: its own copy once refolded, else its first row's.
        func cell(_ position: Int, of index: Int, _ request: BatchInsertRequest) -> BatchInsertRequest.Cell {
            let entry = folded[index]
            return entry.refolded ? refoldedCells[entry.firstCell + position] : request.cells[entry.firstCell + position]
        }

        /// Entry `index`'s cells become its own (in `refoldedCells`), for a later row to change.
        mutating func refold(_ index: Int, _ request: BatchInsertRequest) {
            guard !folded[index].refolded else { return }
            let entry = folded[index]
            let start = refoldedCells.count
            refoldedCells.append(contentsOf: request.cells[entry.firstCell..<(entry.firstCell + entry.cellCount)])
            folded[index].firstCell = start
            folded[index].refolded = true
        }

        func isSet(_ bit: Int, entry: Int) -> Bool {
            masks[entry * maskWords + bit >> 6] & (1 << UInt64(bit & 63)) != 0
        }

        /// Whether the key of `slot` is stored, or made by an earlier record of the request.
        func isStoredOrFolded(_ slot: Int32) -> Bool {
            stored[Int(slot)] != nil || foldedAt[Int(slot)] >= 0
        }

        /// The row number a link to `slot` writes: the stored row's, or the new one's.
        func linkedPK(_ slot: Int32) -> Int64? {
            guard slot >= 0 else { return nil }
            if let pk = stored[Int(slot)] { return pk }
            let at = foldedAt[Int(slot)]
            return at >= 0 && folded[Int(at)].op == UInt8(ascii: "i") ? folded[Int(at)].pk : nil
        }
    }
}
