// swift-tools-version:6.2
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode, strict checking and zero warnings.
let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "CloudStorage",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "CloudStorage", targets: ["CloudStorage"]),
        // The strict local server, for other packages' tests (as swift-log ships its test double).
        .library(name: "StorageEmulator", targets: ["StorageEmulator"]),
        .executable(name: "cloud-storage", targets: ["cloud-storage"]),
    ],
    targets: [
        // CRC32C with SSE4.2 / ARMv8 CRC instructions and a portable fallback.
        .target(
            name: "CCRC32C",
            cSettings: [.treatAllWarnings(as: .error)]
        ),
        // The run-time OpenSSL 3 loader: dlopen, a version check and symbol resolution, nothing else.
        .target(
            name: "COpenSSLLoader",
            cSettings: [.treatAllWarnings(as: .error)],
            // dlopen lives in libc from glibc 2.34; older glibc needs libdl.
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        // gzip over the system's zlib, loaded at run time with dlopen (no zlib.h at build time).
        .target(
            name: "CZlibLoader",
            cSettings: [.treatAllWarnings(as: .error)],
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        // TLS as a byte transformer over memory BIOs (and a socket driver for it), RSA keys and
        // digests, on the OpenSSL that COpenSSLLoader loads at run time.
        .target(
            name: "NativeTLS",
            dependencies: ["COpenSSLLoader", "SystemCalls"],
            swiftSettings: strictSwift
        ),
        // The HTTP/1.1 wire codec shared by the SDK's native transport and the emulator.
        .target(
            name: "HTTP1",
            dependencies: ["CZlibLoader"],
            swiftSettings: strictSwift
        ),
        // The canonical request and string to sign of V4 signed URLs, shared by the SDK's signer and the
        // emulator's verifier so that both build the same text byte for byte.
        .target(
            name: "V4Signing",
            swiftSettings: strictSwift
        ),
        // The wire layer: what Cloud Storage's protocols say, written once for the SDK and the
        // emulator. It depends on nothing, so it can do no I/O: the compiler keeps it pure.
        .target(
            name: "CloudStorageWire",
            swiftSettings: strictSwift
        ),
        // The one system-call layer (sockets, files, signals) of the SDK, the CLI and the emulator:
        // the only target that imports the C library.
        .target(
            name: "SystemCalls",
            swiftSettings: strictSwift
        ),
        // The HTTP client: the native transport (connection pool, exchanges, I/O threads, TLS
        // glue), the URLSession one, and the seam both implement. It knows nothing of storage.
        .target(
            name: "HTTPClient",
            dependencies: ["HTTP1", "SystemCalls", "NativeTLS"],
            swiftSettings: strictSwift
        ),
        .target(
            name: "CloudStorage",
            dependencies: [
                "CCRC32C", "CloudStorageWire", "HTTP1", "HTTPClient", "SystemCalls", "NativeTLS", "V4Signing",
            ],
            swiftSettings: strictSwift
        ),
        // A strict local server for both wire protocols: memory, directory or discard storage, fault injection.
        .target(
            name: "StorageEmulator",
            dependencies: ["CloudStorageWire", "HTTP1", "CCRC32C", "SystemCalls", "NativeTLS", "V4Signing"],
            swiftSettings: strictSwift
        ),
        // Installs (into a virtualenv under .build/) and runs fake-gcs-server on a free loopback port.
        .target(
            name: "FakeGCSServer",
            dependencies: [],
            path: "Tests/FakeGCSServer",
            swiftSettings: strictSwift
        ),
        // Loopback servers for tests of HTTP clients (scripted, numbered, dripping, TLS) and the test
        // PKI's paths, shared by HTTPClientTests, CloudStorageTests, CloudStorageCLITests and StorageTestSupport.
        .target(
            name: "HTTPTestServers",
            dependencies: ["HTTP1", "HTTPClient", "NativeTLS", "CCRC32C"],
            path: "Tests/HTTPTestServers",
            swiftSettings: strictSwift
        ),
        // Fixtures of CloudStorageTests and CloudStorageCLITests: test credentials, auth fakes, payloads, files.
        .target(
            name: "StorageTestSupport",
            dependencies: ["CloudStorage", "HTTP1", "HTTPTestServers", "NativeTLS"],
            path: "Tests/StorageTestSupport",
            swiftSettings: strictSwift
        ),
        // The command-line tool: `cp` uploads (to the built-in emulator by default), `emulator` serves.
        .target(
            name: "CloudStorageCLI",
            dependencies: ["CloudStorage", "CloudStorageWire", "StorageEmulator", "SystemCalls"],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "cloud-storage",
            dependencies: ["CloudStorageCLI"],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "cloud-storage-example",
            dependencies: ["CloudStorage", "FakeGCSServer"],
            path: "Sources/cloud-storage-example",
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "upload-benchmarks",
            dependencies: ["CloudStorage", "CCRC32C", "FakeGCSServer", "StorageEmulator"],
            path: "Benchmarks/upload-benchmarks",
            // The Python client's upload script, run from the source tree.
            exclude: ["python"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CloudStorageTests",
            dependencies: [
                "CloudStorage", "CCRC32C", "FakeGCSServer", "StorageEmulator", "HTTP1", "HTTPClient",
                "CloudStorageCLI", "NativeTLS", "V4Signing", "SystemCalls", "HTTPTestServers", "StorageTestSupport",
            ],
            swiftSettings: strictSwift
        ),
        // The command-line tool's tests: commands run in-process and as a process of their own, against emulators.
        .testTarget(
            name: "CloudStorageCLITests",
            dependencies: [
                "CloudStorageCLI", "CloudStorage", "StorageEmulator", "FakeGCSServer", "HTTP1", "NativeTLS",
                "HTTPTestServers", "StorageTestSupport",
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "StorageEmulatorTests",
            dependencies: ["StorageEmulator", "HTTP1", "NativeTLS", "V4Signing", "FakeGCSServer"],
            // The scripts that drive Google's clients (Python, gcloud), run from the source tree.
            exclude: ["Python", "GCloud"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NativeTLSTests",
            dependencies: ["NativeTLS", "COpenSSLLoader"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "HTTP1Tests",
            dependencies: ["HTTP1"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "V4SigningTests",
            dependencies: ["V4Signing"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "SystemCallsTests",
            dependencies: ["SystemCalls"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CloudStorageWireTests",
            dependencies: ["CloudStorageWire"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "HTTPClientTests",
            dependencies: ["HTTPClient", "HTTP1", "NativeTLS", "SystemCalls", "HTTPTestServers"],
            swiftSettings: strictSwift
        ),
    ]
)
