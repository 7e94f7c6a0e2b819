import Foundation
import Synchronization
import SystemCalls
import Testing

@Suite("Threads that name themselves")
struct NamedThreadTests {
    /// Every thread reads its own name back, however the start-up race falls: before, a thread
    /// that ran before `start()` returned kept its creator's name (seen in CI under load).
    @Test("each of many threads started at once reads back the name it was given")
    func everyThreadHasItsName() async {
        let misnamed = Mutex<[String]>([])
        let finished = Mutex(0)
        let count = 200
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<count {
                let name = "named-\(index)"
                Thread.start(named: name) {
                    let seen = Thread.current.name ?? ""
                    if seen != name { misnamed.withLock { $0.append("\(name) read \(seen)") } }
                    if finished.withLock({
                        $0 += 1; return $0 == count
                    }) {
                        done.resume()
                    }
                }
            }
        }
        #expect(misnamed.withLock { $0 }.isEmpty)
    }
}
