package import HTTPClient

extension NativeHTTPTransport.Configuration {
    /// The default configuration, except that idle connections never age out during a test.
    ///
    /// A starved machine can leave a pooled connection idle past the default `maxIdleTime`
    /// (30 s) between two requests of one test, and a second connection then opens where the
    /// test judges reuse, or where a scripted server answers its second connection otherwise.
    /// Tests judge connections by what the server sent, never by time; those about ageing set
    /// `maxIdleTime` themselves.
    package static func forTests() -> Self {
        var configuration = Self()
        configuration.maxIdleTime = .seconds(3600)
        return configuration
    }
}
