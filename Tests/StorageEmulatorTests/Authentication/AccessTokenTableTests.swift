import Dispatch
import Foundation
import Synchronization
import Testing

@testable import StorageEmulator

/// The token table under many connection threads at once: every grant is counted once, every
/// live token is found, and an expiry from another thread takes effect for all.
@Suite("Access token table")
struct AccessTokenTableTests {
    @Test("1,000 concurrent checks of one token and 200 concurrent grants stay consistent")
    func concurrentUse() {
        let table = AccessTokenTable()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let shared = table.issue(for: .serviceAccount("a"), scopes: ["s"], lifetime: .seconds(60), now: now).token
        let failures = Atomic<Int>(0)
        let issued = Mutex<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 1200) { index in
            if index % 6 == 0 {
                let token = table.issue(for: .user(clientID: "u"), scopes: [], lifetime: .seconds(60), now: now).token
                issued.withLock { _ = $0.insert(token) }
            } else if (try? table.grant(for: shared, now: now)) == nil {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(issued.withLock { $0.count } == 200)
        #expect(table.grantCount == 201)
        table.expireAll()
        #expect(throws: AccessTokenTable.Refusal.expired) { try table.grant(for: shared, now: now) }
        let after = table.issue(for: .serviceAccount("a"), scopes: [], lifetime: .seconds(60), now: now).token
        #expect(throws: Never.self) { try table.grant(for: after, now: now) }
    }
}
