import Foundation
import HTTP1

/// Google storage-testbench's retry-test API (see ``RetryTest``), at the testbench's paths.
extension EmulatorApplication {
    /// Creates a retry test.
    ///
    /// - Parameter instructions: Each JSON API method's instructions, in order.
    /// - Returns: The test, whose ``RetryTest/id`` requests name in `x-retry-test-id`.
    /// - Throws: ``FaultPlanError`` for an unknown method, an invalid instruction, or too many.
    package func createRetryTest(_ instructions: [String: [String]]) throws(FaultPlanError) -> RetryTest {
        let id = String(SessionTable.newID().prefix(32))
        let test = try RetryTest(id: id, instructions: instructions, methods: Self.routes.apiMethodNames)
        retryTests.insert(test, id: id)
        return test
    }

    /// `POST /retry_test`: `{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "HTTP"}`.
    func postRetryTest(_ request: any ServerRequest, _ body: BodyReader) throws -> Reply {
        if let length = request.contentLength, length > Int64(Self.maxFaultPlanBody) {
            throw HTTPError(
                413, "A retry test body may have at most \(Self.maxFaultPlanBody) bytes.", reason: "uploadTooLarge")
        }
        let json = try JSON.decodeObject(try body.readAll(limit: Self.maxFaultPlanBody))
        guard let instructions = json["instructions"] as? [String: [String]], !instructions.isEmpty else {
            throw HTTPError.badRequest("Expected {\"instructions\": {\"<JSON API method>\": [\"…\"]}}.")
        }
        if let transport = json["transport"] {
            guard let name = transport as? String, name.uppercased() == "HTTP" else {
                throw HTTPError.badRequest("The emulator serves retry tests over HTTP only, not '\(transport)'.")
            }
        }
        do {
            return Reply.json(200, try createRetryTest(instructions).resource)
        } catch {
            switch error.kind {
            case .tooLarge: throw HTTPError(413, error.message, reason: "uploadTooLarge")
            case .invalid: throw HTTPError.badRequest(error.message)
            }
        }
    }

    /// `GET /retry_test/<id>`.
    func getRetryTest(_ id: String) throws -> Reply {
        guard let test = retryTests.plan(id) else { throw Self.unknownRetryTest(id) }
        return Reply.json(200, test.resource)
    }

    /// `DELETE /retry_test/<id>`: answered `Deleted <id>` in plain text, as the testbench answers.
    func deleteRetryTest(_ id: String) throws -> Reply {
        guard retryTests.remove(id) else { throw Self.unknownRetryTest(id) }
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/plain; charset=UTF-8")
        return Reply(status: 200, headers: headers, body: Data("Deleted \(id)".utf8))
    }

    /// `GET /retry_tests`: `{"retry_test": [<test>, …]}`, oldest first.
    func listRetryTests() -> Reply {
        Reply.json(200, ["retry_test": retryTests.all.map(\.resource)])
    }

    /// The answer to an id that names no retry test (never created, deleted, or dropped from the table).
    static func unknownRetryTest(_ id: String) -> HTTPError {
        HTTPError(404, "Unknown retry test '\(id)'.")
    }
}
