import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

extension StorageEventTests {
    /// A customer-supplied key travels in every request of an upload and a download, and in the
    /// refused read with another key; none of its forms reaches an event or the error.
    @Test("customer-supplied keys reach neither events nor errors")
    func encryptionKeysStaySecret() async throws {
        try await Reliability.withEmulator(for: .nativeHTTP, faults: []) { emulator in
            let recorder = EventRecorder()
            let storage = Self.storage(emulator, recorder)
            let keyBytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let otherBytes = Array(keyBytes.reversed())
            let key = try StorageEncryptionKey(bytes: keyBytes)
            let other = try StorageEncryptionKey(bytes: otherBytes)
            let reference = storage.reference(withPath: "e/secret.bin").with(.init(encryptionKey: key))
            let payload = TestSupport.payload(size: 2 * Self.chunk + 5, seed: 9)
            _ = try await reference.putDataAsync(payload)
            #expect(try await reference.data(maxSize: 1 << 20) == payload)
            let error = await #expect(throws: StorageError.self) {
                _ = try await storage.reference(withPath: "e/secret.bin").with(.init(encryptionKey: other))
                    .data(maxSize: 1 << 20)
            }
            await storage.configuration.events.flush()

            // Several requests carried the key: the session's start, its chunks, the reads.
            #expect(recorder.events(.request).count >= 4)
            let secrets = [keyBytes, otherBytes].flatMap { bytes in
                [Data(bytes).base64EncodedString(), bytes.map { String(format: "%02x", $0) }.joined()]
            }
            Self.expectNoSecrets(recorder.events, secrets)
            let errorTexts = [String(describing: error), String(reflecting: error), error?.message ?? ""]
            for text in errorTexts {
                for secret in secrets { #expect(!text.contains(secret), "\(text)") }
            }
        }
    }
}
