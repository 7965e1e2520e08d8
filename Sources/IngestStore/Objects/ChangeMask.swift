/// A set of small indexes (attributes or relationships of one entity) as bits: it is
/// updated on every property change, where a `Set<Int>` would hash and allocate.
/// (Not swift-collections' `BitSet`: that allocates storage for any member, and most
/// entities here fit the inline first word, which keeps a change free of allocation.)
struct ChangeMask: Equatable, ExpressibleByArrayLiteral {
    private var words: (UInt64, [UInt64]) = (0, [])

    init() {}

    init(arrayLiteral elements: Int...) {
        for element in elements { insert(element) }
    }

    var isEmpty: Bool { words.0 == 0 && words.1.allSatisfy { $0 == 0 } }

    func contains(_ index: Int) -> Bool {
        if index < 64 { return words.0 & (1 << UInt64(index)) != 0 }
        let word = index / 64 - 1
        return word < words.1.count && words.1[word] & (1 << UInt64(index % 64)) != 0
    }

    mutating func insert(_ index: Int) {
        if index < 64 {
            words.0 |= 1 << UInt64(index)
            return
        }
        let word = index / 64 - 1
        while words.1.count <= word { words.1.append(0) }
        words.1[word] |= 1 << UInt64(index % 64)
    }

    mutating func remove(_ index: Int) {
        if index < 64 {
            words.0 &= ~(1 << UInt64(index))
            return
        }
        let word = index / 64 - 1
        if word < words.1.count { words.1[word] &= ~(1 << UInt64(index % 64)) }
    }

    static func == (lhs: ChangeMask, rhs: ChangeMask) -> Bool { lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 }
}
