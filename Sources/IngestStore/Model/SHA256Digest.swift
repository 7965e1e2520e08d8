import COpenSSL

/// SHA-256 from the system's OpenSSL `libcrypto`: what identifies a model in a store and
/// a pipeline in an import's record. (It replaced swift-crypto, whose BoringSSL took half
/// of a cold build for this one function.)
package enum SHA256Digest {
    /// The digest of `bytes` as 64 lowercase hex digits.
    package static func hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        // EVP_Digest fails only without memory or a broken libcrypto: nothing to go on with.
        precondition(ok == 1 && length == 32, "libcrypto's SHA-256 failed")
        return lowercaseHex(digest[0..<32])
    }
}
