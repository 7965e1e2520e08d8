/// A fast 64-bit hash for the batch path: of a key's bytes (the key cache's slots) and of
/// the fields a row was last written with (a related object repeated exactly is not
/// written again, on both stores).
///
/// Keys and fields come from feeds, so the hash must not be predictable: with a fixed
/// one, a feed could be made whose keys all land in one run of the cache's slots (each
/// insert then probes them all: an import that never ends), or whose changed fields hash
/// as the unchanged ones did (the change is skipped without a word). Each process draws
/// its own secrets, as hash tables that face untrusted keys do (Go's maps, Rust's
/// `RandomState`), and every word goes through a full 64×64→128-bit multiply by a secret,
/// folded (wyhash's "mum"): unlike a multiply mod 2^64, which turns a flipped top bit into
/// a flipped top bit whatever the state (so two inputs differing there collide for every
/// seed), its differences depend on the secret. Not SipHash (`Hasher`): a few
/// instructions a word instead of a few dozen, on every row.
struct FieldHasher {
    private static let secrets: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next() | 1)
    }()

    private var state: UInt64
    private let secret: UInt64

    init() {
        (state, secret) = Self.secrets
    }

    /// A hasher with the given secrets instead of this process's (for tests).
    init(seed: UInt64, secret: UInt64) {
        state = seed
        self.secret = secret | 1
    }

    @inline(__always)
    mutating func mix(_ word: UInt64) {
        let product = (state ^ word).multipliedFullWidth(by: secret)
        state = product.high ^ product.low ^ word
    }

    mutating func mix(_ bytes: UnsafeRawBufferPointer) {
        mix(UInt64(bytes.count))
        var index = 0
        while index + 8 <= bytes.count {
            mix(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        mix(tail)
    }

    /// Mixes the cell at attribute `position` of a request: its position, its kind and its
    /// value, text hashed the same whether in place or kept as a value.
    mutating func mix(_ cell: BatchInsertRequest.Cell, at position: Int, _ request: BatchInsertRequest, text: UnsafeRawBufferPointer) {
        switch cell {
        case .null: mix(UInt64(position) << 8)
        case .int(let number):
            mix(UInt64(position) << 8 | 1)
            mix(UInt64(bitPattern: number))
        case .double(let number):
            mix(UInt64(position) << 8 | 2)
            mix(number.bitPattern)
        case .text(let offset, let count):
            mix(UInt64(position) << 8 | 3)
            mix(UnsafeRawBufferPointer(rebasing: text[Int(offset)..<Int(offset + count)]))
        case .value(let index):
            if case .string(let string) = request.values[Int(index)] {
                mix(UInt64(position) << 8 | 3)
                var string = string
                string.withUTF8 { mix(UnsafeRawBufferPointer($0)) }
            } else {
                mix(UInt64(position) << 8 | 4)
                mix(UInt64(UInt(bitPattern: request.values[Int(index)].hashValue)))
            }
        }
    }

    /// Never 0 (0 means "not known").
    var value: UInt64 {
        let product = state.multipliedFullWidth(by: secret ^ 0xA076_1D64_78BD_642F)
        let h = product.high ^ product.low
        return h == 0 ? 1 : h
    }
}
