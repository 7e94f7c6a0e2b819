import HTTPClient

extension Storage {
    /// The endpoint's protocol for operations on stored objects, building requests with ``options``.
    var objectProtocol: any ObjectWireProtocol {
        switch endpoint.wireProtocol {
        case .gcsJSON: GCSJSONProtocol(baseURL: endpoint.baseURL, options: options)
        case .firebaseV0: FirebaseV0Protocol(baseURL: endpoint.baseURL)
        }
    }

    /// The steps of an upload in the endpoint's protocol, building requests with ``options``.
    var uploadProtocol: any UploadWireProtocol {
        switch endpoint.wireProtocol {
        case .gcsJSON: GCSJSONProtocol(baseURL: endpoint.baseURL, options: options)
        case .firebaseV0: FirebaseV0Protocol(baseURL: endpoint.baseURL)
        }
    }
}
