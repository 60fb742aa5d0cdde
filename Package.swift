// swift-tools-version: 6.2
import PackageDescription

let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let httpClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")

/// What `syncgate --version` says beyond the version: the commit and date of the build, when the build names them
/// (`scripts/install` does: SYNCGATE_COMMIT=abc1234[-dirty], SYNCGATE_BUILD_DATE=YYYY-MM-DD); a plain `swift build`
/// says "commit unknown". A value of any other shape is ignored (it goes into C source as a string literal).
func buildInfoDefine(_ variable: String, allowed: (Character) -> Bool, maxLength: Int) -> [CSetting] {
    guard let value = Context.environment[variable], !value.isEmpty, value.count <= maxLength, value.allSatisfy(allowed) else { return [] }
    return [.define(variable, to: "\"\(value)\"")]
}
let buildInfoSettings =
    buildInfoDefine("SYNCGATE_COMMIT", allowed: { $0.isASCII && ($0.isHexDigit || $0 == "-" || $0.isLetter) }, maxLength: 48)
    + buildInfoDefine("SYNCGATE_BUILD_DATE", allowed: { $0.isASCII && ($0.isNumber || $0 == "-") }, maxLength: 10)

let package = Package(
    name: "syncgate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "syncgate", targets: ["syncgate"]),
        .executable(name: "syncgate-headunit-sim", targets: ["syncgate-headunit-sim"]),
        .library(name: "SyncgateCore", targets: ["SyncgateCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // async-http-client's own TLS library, named directly by SyncgateNetwork (trust roots from a CA bundle).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // The ledger on PostgreSQL (`state: postgres://...`, docs/state.md).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Hummingbird's header types and its service lifecycle, named directly by SyncgateHTTP.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The one JSON value type, its parser and its text (no dependencies): shared by the core's reports, SDL,
        // Sheets and the external plugins' protocol.
        .target(name: "SyncgateJSON"),

        // The core: config, routing, delivery layer, state ledger, engine, reporting.
        .target(
            name: "SyncgateCore",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                logging,
                .product(name: "Metrics", package: "swift-metrics"),
                crypto,
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                nioCore, nioPosix, nioSSL,
                "SyncgateJSON",
            ]
        ),

        // What every HTTP destination shares: proxies from the environment or the `proxy` key, NO_PROXY, the CA
        // bundle a destination trusts (`ca_file`, AWS_CA_BUNDLE, SSL_CERT_FILE), and the HTTPClient configuration
        // made of them (docs/network.md).
        .target(name: "SyncgateNetwork", dependencies: ["SyncgateCore", httpClient, nioCore, nioSSL, crypto]),

        // Destination plugins: one folder each, registered in Sources/syncgate/BuiltinPlugins.swift.
        .target(name: "SyncgateLocal", dependencies: ["SyncgateCore", crypto, nioPosix]),
        .target(name: "SyncgateS3", dependencies: ["SyncgateCore", "SyncgateNetwork", httpClient, crypto, nioCore, nioHTTP1, logging]),
        .target(name: "SyncgateSDL", dependencies: [nioCore, "CZlib", "SyncgateJSON"]),  // SDL wire format: frames, BSON, RPC messages
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),  // the system's zlib, for its CRC-32
        .systemLibrary(name: "CMalloc"),  // glibc's malloc tuning, for `syncgate run` (ProcessMemory)
        .target(name: "CBuildInfo", cSettings: buildInfoSettings),  // the commit and date `--version` prints
        .target(name: "SyncgateHeadUnit", dependencies: ["SyncgateCore", "SyncgateSDL", "SyncgateJSON", crypto, nioCore, nioPosix, logging]),
        .target(
            name: "SyncgateSheets",
            dependencies: [
                "SyncgateCore", "SyncgateNetwork", "SyncgateJSON", httpClient, crypto, nioCore, nioHTTP1, logging,
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),

        // External destination plugins: any program speaking the JSON-lines protocol of docs/plugins.md.
        .target(name: "SyncgateExec", dependencies: ["SyncgateCore", "SyncgateJSON", logging]),

        // The status page and API of `syncgate run` (Hummingbird), with /metrics from swift-prometheus.
        .target(
            name: "SyncgateHTTP",
            dependencies: [
                "SyncgateCore", logging, nioCore, nioPosix,
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),

        // The executables: a thin CLI, and the head-unit simulator used by tests and examples.
        .executableTarget(
            name: "syncgate",
            dependencies: [
                "SyncgateCore", "SyncgateLocal", "SyncgateS3", "SyncgateHeadUnit", "SyncgateSheets", "SyncgateHTTP", "SyncgateExec", "SyncgateJSON", "CMalloc", "CBuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                logging,
            ]
        ),
        .executableTarget(
            name: "syncgate-headunit-sim",
            dependencies: ["SyncgateSDL", "SyncgateJSON", nioCore, nioPosix, logging, .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // Tests. Integration tests run the built executables against servers on loopback.
        .target(name: "SyncgateTestSupport", dependencies: ["SyncgateCore", logging], path: "Tests/SyncgateTestSupport"),
        // The conformance suite every destination plugin runs (Tests/DestinationConformance).
        .target(name: "DestinationConformance", dependencies: ["SyncgateCore", "SyncgateTestSupport"], path: "Tests/DestinationConformance"),
        .testTarget(name: "SyncgateJSONTests", dependencies: ["SyncgateJSON"]),
        .testTarget(name: "SyncgateCoreTests", dependencies: ["SyncgateCore", "SyncgateLocal", "SyncgateTestSupport", "DestinationConformance", nioCore]),
        .testTarget(name: "SyncgateEndToEndTests", dependencies: ["SyncgateCore", "SyncgateExec", "SyncgateJSON", "SyncgateTestSupport", "DestinationConformance", "syncgate", "syncgate-headunit-sim"]),
        .testTarget(name: "SyncgateNetworkTests", dependencies: ["SyncgateNetwork", "SyncgateCore", "SyncgateTestSupport"]),
        .testTarget(name: "SyncgateS3Tests", dependencies: ["SyncgateS3", "SyncgateNetwork", "SyncgateCore", "SyncgateTestSupport", "DestinationConformance", "syncgate"]),
        .testTarget(
            name: "SyncgateHeadUnitTests",
            dependencies: ["SyncgateHeadUnit", "SyncgateSDL", "SyncgateJSON", "SyncgateCore", "SyncgateTestSupport", "DestinationConformance", "syncgate", "syncgate-headunit-sim"]
        ),
        .testTarget(name: "SyncgateHTTPTests", dependencies: ["SyncgateHTTP", "SyncgateCore", "SyncgateLocal", "SyncgateTestSupport", httpClient, nioCore, nioHTTP1, logging]),
        .testTarget(name: "SyncgateSheetsTests", dependencies: ["SyncgateSheets", "SyncgateJSON", "SyncgateNetwork", "SyncgateCore", "SyncgateTestSupport", "DestinationConformance", "syncgate"]),
    ]
)
