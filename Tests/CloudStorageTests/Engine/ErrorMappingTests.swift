import Foundation
import Testing

@testable import CloudStorage
@testable import HTTPClient

@Suite("HTTP status to StorageError")
struct ErrorMappingTests {
    static func response(_ status: Int, _ message: String? = nil) -> HTTPResponse {
        let body = message.map { Data("{\"error\":{\"code\":\(status),\"message\":\"\($0)\"}}".utf8) } ?? Data()
        return HTTPResponse(status: status, headers: [:], body: body)
    }

    @Test(arguments: [
        (400, StorageErrorCode.invalidArgument), (401, .unauthenticated), (403, .unauthorized),
        (411, .invalidArgument), (413, .invalidArgument), (429, .quotaExceeded), (500, .unknown), (503, .unknown),
        (204, .protocolViolation), (302, .protocolViolation), (308, .protocolViolation), (418, .unknown),
    ])
    func statusesMapToCodes(status: Int, code: StorageErrorCode) {
        let error = Self.response(status, "no").storageError(about: .object("a/b"))
        #expect(error.code == code)
        #expect(error.httpStatus == status)
        #expect(error.serverMessage == "no")
    }

    @Test func descriptionSaysACauseOnce() {
        let transport = HTTPTransportError(kind: .tlsFailure, message: "The server's certificate has expired.")
        let repeated = StorageError(.tlsFailure, transport.message, underlyingError: transport)
        #expect(repeated.description == "StorageError.tlsFailure: The server's certificate has expired.")
        let reset = HTTPTransportError(kind: .connectionLost, message: "The connection was reset.")
        let wrapped = StorageError(.unknown, "The request failed.", underlyingError: reset)
        #expect(wrapped.description.hasSuffix("[caused by: connectionLost: The connection was reset.]"))
    }

    @Test func notFoundSaysWhatWasMissing() {
        #expect(Self.response(404).storageError(about: .bucket("b")).code == .bucketNotFound)
        #expect(Self.response(404).storageError(about: .object("a/b")).code == .objectNotFound)
        #expect(Self.response(404).storageError(about: .object("a/b")).message.contains("a/b"))
    }

    @Test(arguments: [
        (400, "Unknown project id: 0"), (403, "The project to be billed does not exist."),
        (404, "Project 12345 not found"), (400, "User project specified in the request is invalid."),
    ])
    func aMissingProjectIsProjectNotFound(status: Int, message: String) {
        #expect(Self.response(status, message).storageError(about: .bucket("b")).code == .projectNotFound)
    }

    @Test func aChecksumComplaintIsNonMatchingChecksumOnlyWhenOneWasSent() {
        let response = Self.response(
            400, "Provided CRC32C \\\"AAAAAA==\\\" doesn't match calculated CRC32C \\\"BBBBBB==\\\".")
        #expect(response.storageError(about: .object("o"), sentChecksum: true).code == .nonMatchingChecksum)
        #expect(response.storageError(about: .object("o"), sentChecksum: false).code == .invalidArgument)
    }

    @Test func retryableStatuses() {
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(Self.response(status).isRetryable)
        }
        for status in [200, 308, 400, 401, 403, 404, 412] {
            #expect(!Self.response(status).isRetryable)
        }
    }

    @Test func serverMessagesComeFromJSONOrText() {
        #expect(Self.response(500, "boom").serverMessage == "boom")
        #expect(
            HTTPResponse(status: 500, headers: [:], body: Data("  plain text \n".utf8)).serverMessage == "plain text")
        #expect(HTTPResponse(status: 500, headers: [:], body: Data()).serverMessage == nil)
    }

    @Test func aCancelledTokenProviderCancels() async {
        let authorization = StorageAuthorization.tokenProvider { _ in throw CancellationError() }
        await #expect(throws: StorageError.self) { try await authorization.token(forceRefresh: false) }
        do {
            _ = try await authorization.token(forceRefresh: false)
        } catch {
            #expect(error.code == .cancelled)
        }
        let failing = StorageAuthorization.tokenProvider { _ in throw URLError(.badServerResponse) }
        do {
            _ = try await failing.token(forceRefresh: false)
        } catch {
            #expect(error.code == .unauthenticated)
        }
    }
}
