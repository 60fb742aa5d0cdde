import Foundation

extension GatewayConfig {
    /// The names of the sources some route sends to `destination`.
    static func sources(routedTo destination: String, routes: [RouteConfig], sources: [SourceConfig]) -> Set<String> {
        var names = Set<String>()
        for route in routes where route.to.contains(destination) {
            names.formUnion(route.sources ?? sources.map(\.name))
        }
        return names
    }

    /// Sets each source's ``OwnPaths``: the folder of each destination writing on this machine that lies in a source
    /// routed to it, syncgate's state where it lies in a source, the secret files the config names, and the config
    /// (`configFile`) when a secret is written in it. Returns an error, at the destination's folder
    /// key, for a destination whose folder is a source routed to it or holds one: a copy would be written over the
    /// file it copies (the same folder), or over another file of the source (a source folder `in` inside the
    /// destination's, whose own folder `in` copies to `in/...`); and for a destination whose folder is another's.
    /// Sources and folders not there yet are judged as they will be made (``FolderOnDisk``); a source folder that is
    /// missing holds nothing.
    static func findOwnPaths(in sources: inout [SourceConfig], destinations: [DestinationConfig], routes: [RouteConfig],
                             state: StateLocation, stateDirectory: String, secretFiles: [String] = [],
                             configFile: String? = nil) -> [ConfigError] {
        var errors: [ConfigError] = []
        func refuse(_ location: ConfigError, _ message: String) {
            var error = location
            error.message = message
            errors.append(error)
        }
        func joined(_ offset: String, _ name: String) -> String { offset.isEmpty ? name : offset + "/" + name }
        let folders = sources.map { FolderOnDisk($0.path) }
        // A secret is never sent, whichever source holds it and wherever that source's files go; nor is the config
        // when a secret is written in it.
        let secrets = secretFiles.map { ($0, "a secret the config reads") } + (configFile.map { [($0, "the config, a secret is written in it")] } ?? [])
        for (file, owner) in secrets {
            guard let folder = FolderOnDisk((file as NSString).deletingLastPathComponent) else { continue }
            let name = (file as NSString).lastPathComponent
            for index in sources.indices {
                guard let root = folders[index], let offset = folder.offset(below: root) else { continue }
                sources[index].own.addFile(joined(offset, name), owner: owner)
            }
        }
        // The state: the whole `.syncgate` folder, else the ledger's files and the cached tokens by name.
        if let stateFolder = FolderOnDisk(stateDirectory, mayBeMissing: true) {
            let dedicated = (stateDirectory as NSString).lastPathComponent == GatewayConfig.stateFolderName
            for index in sources.indices {
                if sources[index].followSymlinks && dedicated { sources[index].own.addLinkedFolder(stateFolder.path) }
                guard let root = folders[index], let offset = stateFolder.offset(below: root) else { continue }
                if dedicated && !offset.isEmpty {
                    sources[index].own.addFolder(offset, owner: "syncgate's state")
                    continue
                }
                if case .sqlite(let path) = state { sources[index].own.addStateFile(joined(offset, (path as NSString).lastPathComponent)) }
                sources[index].own.setTokenFolder(offset)
            }
        }
        var written: [(name: String, folder: FolderOnDisk)] = []
        for destination in destinations {
            guard let (path, location) = destination.folder, let folder = FolderOnDisk(path, mayBeMissing: true) else { continue }
            // Two destinations writing into one folder: a name each sends overwrites the other's copy unnoticed,
            // and each ledger says its own is there.
            if let other = written.first(where: { $0.folder.path == folder.path }) {
                refuse(location, "\(path) is also the folder of destination '\(other.name)': a copy of one would overwrite a copy of the other unnoticed; send both routes to one destination, or give each a folder of its own")
            }
            written.append((destination.name, folder))
            let routed = GatewayConfig.sources(routedTo: destination.name, routes: routes, sources: sources)
            for index in sources.indices where routed.contains(sources[index].name) {
                if sources[index].followSymlinks { sources[index].own.addLinkedFolder(folder.path) }
                guard let root = folders[index] else { continue }
                let source = sources[index].name
                if let offset = folder.offset(below: root) {
                    if offset.isEmpty {
                        refuse(location, "\(path) is the folder of source '\(source)', which is routed to this destination: each copy would be written over the file it copies; give the destination a folder of its own")
                    } else {
                        sources[index].own.addFolder(offset, owner: "destination \(destination.name)'s folder")
                    }
                } else if let offset = root.offset(below: folder) {
                    refuse(location, "\(path) holds source '\(source)' (at \(offset)), which is routed to this destination: a copy could be written over a file of the source; give the destination a folder outside the source")
                }
            }
        }
        return errors
    }

    /// The name of the folder syncgate keeps its state in by default (beside the config).
    static let stateFolderName = ".syncgate"
}
