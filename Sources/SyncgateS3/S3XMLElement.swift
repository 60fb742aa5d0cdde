import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element of an S3 response (ListBucketResult, Error, DeleteResult, ...), read with Foundation's
/// `XMLParser`. Namespaces are ignored: S3 answers use one default namespace or none.
///
/// Unchecked: `text` and `children` are set only by the parser that builds the tree (``parse(_:)``, on one
/// thread), before the element is handed out; from then on it is only read.
public final class S3XMLElement: @unchecked Sendable {
    public let name: String
    public fileprivate(set) var text: String = ""
    public fileprivate(set) var children: [S3XMLElement] = []

    init(name: String) { self.name = name }

    /// The first child with this name.
    public func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }

    /// Every child with this name.
    public func all(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }

    /// The text of the first child with this name.
    public func value(_ name: String) -> String? { child(name)?.text }

    /// Parses a document; `nil` when it is not well-formed XML.
    public static func parse(_ data: Data) -> S3XMLElement? {
        // Foundation's XMLParser on Linux traps on names holding invalid UTF-8 or NUL bytes (found by fuzzing):
        // refuse anything that is not valid UTF-8 made of XML 1.0 characters before it gets there.
        guard isXMLText(data) else { return nil }
        // It also crashes on processing instructions named like the declaration (`<?xml?>`, `<?XML?>`): S3 answers
        // are UTF-8 and hold no processing instruction or DTD, so drop the leading declaration and refuse any other
        // `<?` or `<!DOCTYPE` (no entity expansion either).
        let body = withoutDeclaration(data)
        guard body.firstRange(of: Data("<?".utf8)) == nil, body.firstRange(of: Data("<!DOCTYPE".utf8)) == nil,
            body.firstRange(of: Data("<!ENTITY".utf8)) == nil
        else { return nil }
        let parser = XMLParser(data: body)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let builder = Builder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else { return nil }
        return root
    }

    /// The document without a leading `<?xml ...?>` declaration (and byte-order mark).
    static func withoutDeclaration(_ data: Data) -> Data {
        var bytes = data[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        while let first = bytes.first, first == 0x20 || first == 0x09 || first == 0x0A || first == 0x0D { bytes = bytes.dropFirst() }
        guard bytes.starts(with: Array("<?xml".utf8)) else { return Data(bytes) }
        let end = Array("?>".utf8)
        var index = bytes.startIndex + 5
        while index + 1 < bytes.endIndex {
            if bytes[index] == end[0] && bytes[index + 1] == end[1] { return Data(bytes[(index + 2)...]) }
            index += 1
        }
        return Data()
    }

    /// Valid UTF-8 without the control characters XML 1.0 forbids (all of C0 but tab, LF and CR) or U+FFFE/U+FFFF.
    static func isXMLText(_ data: Data) -> Bool {
        guard let text = String(validating: data, as: UTF8.self) else { return false }
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x20 && value != 0x09 && value != 0x0A && value != 0x0D { return false }
            if value == 0xFFFE || value == 0xFFFF { return false }
        }
        return true
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var root: S3XMLElement?
        var stack: [S3XMLElement] = []

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
            attributes attributeDict: [String: String] = [:]
        ) {
            let element = S3XMLElement(name: elementName)
            if let parent = stack.last { parent.children.append(element) } else if root == nil { root = element }
            stack.append(element)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            _ = stack.popLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            stack.last?.text += String(decoding: CDATABlock, as: UTF8.self)
        }
    }
}
