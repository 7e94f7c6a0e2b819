import FakeGCSServer
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The few server requests the benchmark needs beyond ``FakeGCSServer``'s
/// own API: deleting objects, because the memory backend keeps every object
/// in RAM.
struct ServerClient: Sendable {
    let server: FakeGCSServer
    let bucket: String

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    /// Deletes an object; an absent object is not an error.
    ///
    /// - Parameter object: The object name.
    /// - Throws: ``BenchmarkError`` when the server answers other than 200, 204 or 404.
    func delete(_ object: String) async throws {
        let name = object.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? object
        guard let url = URL(string: server.baseURL.absoluteString + "/storage/v1/b/\(bucket)/o/\(name)") else {
            throw BenchmarkError("cannot form the URL to delete \(object)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "DELETE"
        let (_, response) = try await Self.session.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard [200, 204, 404].contains(status) else {
            throw BenchmarkError("deleting \(object) answered HTTP \(status)")
        }
    }

    /// The facts of a stored object as the server reports them.
    ///
    /// - Parameter object: The object name.
    /// - Returns: Size and checksums from the object resource.
    func facts(of object: String) async throws -> ObjectFacts {
        try ObjectFacts(objectResource: try await server.objectResource(bucket: bucket, object: object))
    }
}
