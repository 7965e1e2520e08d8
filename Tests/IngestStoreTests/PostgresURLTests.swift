@testable import IngestStore
import Testing

/// An address libpq cannot read is shown with libpq's reason only when it cannot hold a
/// password; otherwise neither the address nor the reason (which quotes it) is printed.
@Suite struct PostgresURLTests {
    @Test(arguments: ["postgresql://u:secret@h/db?nosuch=1", "postgresql://u:ab?c%zz@h/db", "postgresql://u:a/bzz@h/db?x=1",
                      "postgresql:///db?PASSWORD=x&nosuch=1", "postgresql:///db?pass%77ord=x&nosuch=1", "host=h password=secret nosuch=1"])
    func anAddressThatMayHoldAPasswordIsNeverPrinted(_ text: String) {
        let error = #expect(throws: PostgresError.self) { try PostgresURL(text) }
        #expect(error.map { "\($0)" } == "cannot connect to PostgreSQL at (an address libpq cannot read): not a valid postgresql:// URL or key=value string (percent-encode special characters in the password, or put it in PGPASSWORD or ~/.pgpass)")
    }

    @Test func anAddressWithoutOneIsShownWithLibpqsReason() {
        let text = "postgresql://postgres@/db?host=/tmp&nosuchoption=1"
        let error = #expect(throws: PostgresError.self) { try PostgresURL(text) }
        #expect(error.map { "\($0)" } == #"cannot connect to PostgreSQL at postgresql://postgres@/db?host=/tmp&nosuchoption=1: invalid URI query parameter: "nosuchoption""#)
    }
}
