import Foundation

/// This machine's name, as gethostname(2) gives it (not `ProcessInfo.hostName`, which may
/// resolve it through DNS and wait): import locks and history name their process by it.
package enum HostName {
    package static let current: String = {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()
}
