import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element of an S3 response (ListBucketResult, Error, DeleteResult, ...), read with Foundation's
/// `XMLParser`. Namespaces are ignored: S3 answers use one default namespace or none.
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
    ///
    /// S3 answers are plain UTF-8 documents: an optional XML declaration, then elements. Anything else is refused
    /// before it reaches Foundation's XMLParser, which on Linux crashes on some malformed input (found by fuzzing,
    /// kept as regression tests in S3ParserFuzzTests): invalid UTF-8 in an element name (a trap), a processing
    /// instruction without data (a NULL strlen). A DOCTYPE (entities) is refused too.
    public static func parse(_ data: Data) -> S3XMLElement? {
        guard isPlainDocument(data) else { return nil }
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let builder = Builder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else { return nil }
        return root
    }

    /// Valid UTF-8, no processing instruction but a leading `<?xml ...?>` declaration, no `<!DOCTYPE`/`<!ENTITY`.
    static func isPlainDocument(_ data: Data) -> Bool {
        guard let text = String(validating: data, as: UTF8.self) else { return false }
        var rest = Substring(text)
        if rest.hasPrefix("<?xml ") {
            // The declaration: attributes only, up to the first "?>".
            guard let end = rest.range(of: "?>"), !rest[rest.index(rest.startIndex, offsetBy: 2)..<end.lowerBound].contains("<") else { return false }
            rest = rest[end.upperBound...]
        }
        return !rest.contains("<?") && !rest.contains("<!DOCTYPE") && !rest.contains("<!ENTITY") && !rest.contains("<!doctype")
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
