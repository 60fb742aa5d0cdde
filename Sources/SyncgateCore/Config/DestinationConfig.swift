/// A configured destination: its plugin instance and the delivery settings that wrap it.
public struct DestinationConfig: Sendable {
    public var name: String
    public var type: String
    public var settings: DeliverySettings
    public var destination: any Destination

    public init(name: String, type: String, settings: DeliverySettings, destination: any Destination) {
        self.name = name
        self.type = type
        self.settings = settings
        self.destination = destination
    }
}

struct RawDestinationHead: Decodable {
    var name: String
    var type: String
    var delivery: DeliveryOverrides

    enum CodingKeys: String, CodingKey { case name, type }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.decode(String.self, forKey: .type)
        delivery = try DeliveryOverrides(from: decoder)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            throw ConfigValueError("must be letters, digits, '-', '_' or '.'", key: CodingKeys.name)
        }
    }
}
