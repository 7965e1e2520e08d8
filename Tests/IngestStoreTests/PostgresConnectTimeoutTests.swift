import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

@Suite struct PostgresConnectTimeoutTests {
    @Test func aServerThatNeverAnswersFailsWithinTheURLsConnectTimeout() throws {
        let listener = try SilentListener()
        let url = try PostgresURL("postgresql://nobody@127.0.0.1:\(listener.port)/none?connect_timeout=1")
        let started = ContinuousClock.now
        #expect(throws: PostgresError.connection(target: "\(url) (host 127.0.0.1, port \(listener.port), database none, user nobody)",
                                                 reason: "connection to server at \"127.0.0.1\", port \(listener.port) failed: timeout expired")) {
            _ = try PostgresConnection(url)
        }
        // libpq takes 1 as its minimum, 2 s; well under the default of 10 s, so the URL's own value was kept.
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(1.5) && elapsed < .seconds(8), "\(elapsed)")
    }

    @Test func aConnectionGetsTheDefaultTimeoutUnlessTheURLOrPGCONNECT_TIMEOUTSetsOne() throws {
        let plain = try PostgresURL("postgresql://me@db/photos")
        let own = try PostgresURL("postgresql://me@db/photos?connect_timeout=3")
        // First, so that the address's own connect_timeout, expanded after it, wins; none
        // where the environment sets one, which libpq then reads.
        let fallback = ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil ? ["connect_timeout=10"] : []
        #expect(plain.connectionOptions.map { "\($0.keyword)=\($0.value)" } == fallback + ["dbname=postgresql://me@db/photos"])
        #expect(own.connectionOptions.map { "\($0.keyword)=\($0.value)" } == fallback + ["dbname=postgresql://me@db/photos?connect_timeout=3"])
        #expect(PostgresURL.defaultConnectTimeout == 10)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aRealConnectionUsesTheDefaultOrTheURLsTimeout() throws {
        let base = try StoreBackend.newDatabase()
        let fallback = ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"].flatMap { Int($0) } ?? 10
        #expect(try PostgresConnection(PostgresURL(base)).connectTimeout == fallback)
        #expect(try PostgresConnection(PostgresURL(base + "&connect_timeout=3")).connectTimeout == 3)
    }
}
