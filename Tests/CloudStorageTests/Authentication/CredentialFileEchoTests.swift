import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Errors about a credentials file name its fields and what is wrong, never a field's value (a
/// key pasted into the wrong field must not reach a log), and say what a path that is not a
/// file is, without talking of uploads.
extension CredentialFileTests {
    /// Each field set to text that must not be echoed, and the phrase the error says instead.
    static var echoedFields: [(String, String, (inout [String: Any], String) -> Void)] {
        [
            ("type holding a key", "unknown \"type\"", { $0["type"] = $1 }),
            ("token_uri that is no URL", "not an http(s) URL", { $0["token_uri"] = "ftp://x/" + $1 }),
            ("token_uri on plain HTTP", "plain HTTP to another machine", { $0["token_uri"] = "http://\($1).example/" }),
        ]
    }

    @Test("no error about a credentials file echoes a field's value")
    func errorsEchoNoFieldValue() throws {
        let pem = try TestCredentials.text("service-account.key")
        for (label, phrase, edit) in Self.echoedFields {
            // A short marker for the URL fields (a host cannot hold a PEM block), the key itself for `type`.
            let secret = label.hasPrefix("type") ? pem : "secretmarker42"
            let data = try TestKeyFiles.serviceAccountJSON { edit(&$0, secret) }
            // Once expecting a service account (as a key file is read), once any type (as ADC reads).
            let expecting = try #require(throws: StorageError.self, "\(label)") {
                try StorageAuthorization.serviceAccount(keyJSON: data)
            }
            let anyType = try #require(throws: StorageError.self, "\(label)") {
                try CredentialFile.credential(in: data, source: "F")
            }
            for error in [expecting, anyType] {
                #expect(error.code == .invalidArgument, "\(label)")
                #expect(error.message.contains(phrase), "\(label): \(error.message)")
                let said = String(describing: error)
                #expect(!said.contains(secret.prefix(20)) && !said.contains("BEGIN"), "\(label): \(said)")
            }
        }
    }

    @Test("a credentials path that is a directory or a device is called that, not a file to upload")
    func aPathThatIsNoFileIsCalledWhatItIs() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (path, what) in [(directory.path, "is a directory"), ("/dev/null", "is a FIFO, socket or device")] {
            let error = try #require(throws: StorageError.self) {
                try StorageAuthorization.serviceAccount(keyFile: URL(fileURLWithPath: path))
            }
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("credentials file"), "\(error.message)")
            #expect(error.message.contains("\(path) \(what)"), "\(error.message)")
            #expect(!error.message.contains("upload"), "\(error.message)")
        }
    }
}
