//! libvirt's domain XML, both ways: a small reader for what `virsh dumpxml`
//! and `virsh domcapabilities` print (elements, attributes, text; no DTD,
//! no namespaces beyond keeping the prefix in the name), and what the
//! driver reads from a domain: its essentials for the fingerprint and the
//! way in (a unix-socket channel to the agent, a network interface). That
//! text comes from a libvirt daemon, maybe on another machine: it is
//! untrusted, so the reader is bounded in size, depth and element count
//! and fails with a message instead of panicking (fuzzed:
//! `fuzz/bodies.rs`, `libvirt_xml`). Writing, the other way, escapes
//! every value it puts in.

use std::collections::BTreeMap;

/// The most XML read from libvirt (a domain's is a few KiB).
pub const MAX_XML: usize = 1 << 20;
/// The deepest nesting accepted.
const MAX_DEPTH: usize = 64;
/// The most elements accepted.
const MAX_ELEMENTS: usize = 50_000;

/// One element with its attributes, children and text (trimmed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child named `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The element at a path of child names (`["devices", "disk"]` is the
    /// first disk).
    pub fn at(&self, path: &[&str]) -> Option<&Element> {
        path.iter().try_fold(self, |e, name| e.child(name))
    }
}

/// Decodes the five named entities and character references.
fn unescape(s: &str) -> Result<String, String> {
    if !s.contains('&') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after
            .find(';')
            .filter(|&e| e <= 10)
            .ok_or_else(|| "an '&' that starts no entity".to_string())?;
        let name = &after[..end];
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "apos" => '\'',
            "quot" => '"',
            _ => {
                let code = if let Some(hex) = name.strip_prefix("#x") {
                    u32::from_str_radix(hex, 16).ok()
                } else if let Some(dec) = name.strip_prefix('#') {
                    dec.parse().ok()
                } else {
                    None
                };
                code.and_then(char::from_u32)
                    .ok_or_else(|| format!("unknown entity &{name};"))?
            }
        };
        out.push(c);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Escapes text for an attribute or element content.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&apos;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-.:".contains(c)
}

/// Parses the attributes inside a start tag (after its name).
fn attributes(mut s: &str) -> Result<Vec<(String, String)>, String> {
    let mut attrs = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(attrs);
        }
        let name_end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
        if name_end == 0 {
            return Err(format!("a bad attribute at {:?}", head(s)));
        }
        let name = &s[..name_end];
        let rest = s[name_end..].trim_start();
        let rest = rest
            .strip_prefix('=')
            .ok_or_else(|| format!("attribute {name} has no value"))?
            .trim_start();
        let quote = rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')
            .ok_or_else(|| format!("attribute {name}'s value is not quoted"))?;
        let body = &rest[1..];
        let close = body
            .find(quote)
            .ok_or_else(|| format!("attribute {name}'s value is not closed"))?;
        if attrs.iter().any(|(k, _)| k == name) {
            return Err(format!("attribute {name} given twice"));
        }
        attrs.push((name.to_string(), unescape(&body[..close])?));
        s = &body[close + 1..];
    }
}

fn head(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Parses one XML document into its root element.
pub fn parse(input: &str) -> Result<Element, String> {
    if input.len() > MAX_XML {
        return Err(format!("more than {} KiB of XML", MAX_XML >> 10));
    }
    let mut tree = Tree::default();
    let mut rest = input;
    loop {
        let Some(lt) = rest.find('<') else {
            if !rest.trim().is_empty() && tree.stack.is_empty() {
                return Err("text outside the root element".into());
            }
            break;
        };
        tree.text(&rest[..lt])?;
        rest = &rest[lt..];
        if let Some(r) = rest.strip_prefix("<!--") {
            let end = r.find("-->").ok_or("a comment that does not end")?;
            rest = &r[end + 3..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("<?") {
            let end = r.find("?>").ok_or("a declaration that does not end")?;
            rest = &r[end + 2..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("<![CDATA[") {
            let end = r.find("]]>").ok_or("a CDATA section that does not end")?;
            let top = tree
                .stack
                .last_mut()
                .ok_or("CDATA outside the root element")?;
            top.text.push_str(r[..end].trim());
            rest = &r[end + 3..];
            continue;
        }
        if rest.starts_with("<!") {
            return Err("a DTD or other markup declaration (not accepted)".into());
        }
        let end = rest.find('>').ok_or("a tag that does not end")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        match tag.strip_prefix('/') {
            Some(name) => tree.close(name.trim())?,
            None => tree.open(tag)?,
        }
    }
    if let Some(open) = tree.stack.last() {
        return Err(format!("<{}> is not closed", open.name));
    }
    tree.root.ok_or_else(|| "no element".into())
}

/// A document as `parse` builds it: the elements open, the root once it
/// has closed, and how many elements there were (bounded).
#[derive(Default)]
struct Tree {
    stack: Vec<Element>,
    root: Option<Element>,
    count: usize,
}

impl Tree {
    /// Text before a tag: the open element's, or an error outside one.
    fn text(&mut self, text: &str) -> Result<(), String> {
        match self.stack.last_mut() {
            Some(top) => {
                let t = unescape(text.trim())?;
                if !t.is_empty() {
                    if !top.text.is_empty() {
                        top.text.push(' ');
                    }
                    top.text.push_str(&t);
                }
            }
            None if !text.trim().is_empty() => {
                return Err("text outside the root element".into());
            }
            None => {}
        }
        Ok(())
    }

    /// `</name>`: closes the open element, which must be `name`.
    fn close(&mut self, name: &str) -> Result<(), String> {
        let done = self
            .stack
            .pop()
            .ok_or_else(|| format!("</{}> closes nothing", head(name)))?;
        if done.name != name {
            return Err(format!("<{}> closed by </{}>", done.name, head(name)));
        }
        self.add(done)
    }

    /// `<tag>` or `<tag/>`: a new element, bounded in number and depth.
    fn open(&mut self, tag: &str) -> Result<(), String> {
        let (tag, empty) = match tag.strip_suffix('/') {
            Some(t) => (t, true),
            None => (tag, false),
        };
        let name_end = tag.find(|c: char| !is_name_char(c)).unwrap_or(tag.len());
        let name = &tag[..name_end];
        if name.is_empty()
            || !tag[name_end..].is_empty() && !tag[name_end..].starts_with(char::is_whitespace)
        {
            return Err(format!("a bad tag <{}>", head(tag)));
        }
        self.count += 1;
        if self.count > MAX_ELEMENTS {
            return Err(format!("more than {MAX_ELEMENTS} elements"));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        if self.stack.is_empty() && self.root.is_some() {
            return Err("two root elements".into());
        }
        let element = Element {
            name: name.to_string(),
            attrs: attributes(&tag[name_end..])?,
            ..Element::default()
        };
        match empty {
            true => self.add(element),
            false => {
                self.stack.push(element);
                Ok(())
            }
        }
    }

    /// A complete element: its parent's child, or the root.
    fn add(&mut self, element: Element) -> Result<(), String> {
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(element),
            None if self.root.is_some() => return Err("two root elements".into()),
            None => self.root = Some(element),
        }
        Ok(())
    }
}

/// The agent's virtio-serial channel name in a domain of the user's.
pub const CHANNEL_NAME: &str = "org.virtperf.agent";

/// How the host reaches the agent in a domain.
#[derive(Debug, Clone, PartialEq)]
pub enum WayIn {
    /// A unix socket libvirt listens on: serial port 1 (virtperf's init
    /// speaks on ttyS1) or a channel named `org.virtperf.agent`.
    Socket(String),
    /// A network interface: ssh to the address `virsh domifaddr` reports.
    Network,
}

/// What the driver reads from a domain's XML.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainXml {
    root: Element,
}

impl DomainXml {
    pub fn parse(text: &str) -> Result<DomainXml, String> {
        let root = parse(text)?;
        if root.name != "domain" {
            return Err(format!("the root element is <{}>, not <domain>", root.name));
        }
        Ok(DomainXml { root })
    }

    /// The socket a channel to the agent listens on, if the domain has one
    /// (libvirt fills the path in; in a running domain it exists).
    pub fn agent_socket(&self) -> Option<String> {
        let devices = self.root.child("devices")?;
        let unix_bound = |e: &Element| {
            let src = e.child("source")?;
            (e.attr("type") == Some("unix") && src.attr("mode").unwrap_or("bind") == "bind")
                .then(|| src.attr("path").map(str::to_string))
                .flatten()
        };
        devices
            .all("channel")
            .filter(|c| c.child("target").and_then(|t| t.attr("name")) == Some(CHANNEL_NAME))
            .chain(
                devices
                    .all("serial")
                    .filter(|s| s.child("target").and_then(|t| t.attr("port")) == Some("1")),
            )
            .find_map(unix_bound)
    }

    /// The ways in this domain offers, the agent's channel first.
    pub fn ways_in(&self) -> Vec<WayIn> {
        let mut out = Vec::new();
        if let Some(path) = self.agent_socket() {
            out.push(WayIn::Socket(path));
        }
        if self.root.at(&["devices", "interface"]).is_some() {
            out.push(WayIn::Network);
        }
        out
    }

    /// Whether it boots a kernel and initrd given on the host (virtperf's
    /// initramfs is booted that way).
    pub fn direct_boot(&self) -> bool {
        self.root.at(&["os", "initrd"]).is_some()
    }

    /// The essentials a comparison must show: vCPUs and their pinning, the
    /// CPU mode and model, memory and its backing, each disk's bus and
    /// cache, each NIC's model. Values are shortened and made one line.
    pub fn essentials(&self) -> BTreeMap<String, String> {
        let r = &self.root;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            m.insert(k.to_string(), crate::core::text::one_line(&v, 200));
        };
        put("domain type", r.attr("type").unwrap_or("?").to_string());
        if let Some(v) = r.child("vcpu") {
            let mut s = v.text.clone();
            if let Some(cur) = v.attr("current") {
                s.push_str(&format!(" (current {cur})"));
            }
            put("vcpus", s);
        }
        put("pinning", pinning(r));
        put("cpu", cpu_mode(r));
        if let Some(mem) = r.child("memory") {
            put("memory", mib(&mem.text, mem.attr("unit").unwrap_or("KiB")));
        }
        put("memory backing", memory_backing(r));
        let devices = r.child("devices");
        put("disks", listed(devices.map(disks).unwrap_or_default()));
        put("net", listed(devices.map(nics).unwrap_or_default()));
        m
    }
}

/// Items joined by "; ", or "none".
fn listed(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join("; ")
    }
}

/// Each vCPU's pinning ("0:2 1:3"), the whole domain's ("all:0-3"), or
/// "none".
fn pinning(r: &Element) -> String {
    let mut pins: Vec<String> = r
        .at(&["cputune"])
        .map(|t| {
            t.all("vcpupin")
                .map(|p| {
                    format!(
                        "{}:{}",
                        p.attr("vcpu").unwrap_or("?"),
                        p.attr("cpuset").unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if pins.is_empty() {
        if let Some(set) = r.child("vcpu").and_then(|v| v.attr("cpuset")) {
            pins.push(format!("all:{set}"));
        }
    }
    if pins.is_empty() {
        "none".into()
    } else {
        pins.join(" ")
    }
}

/// The CPU mode and model ("host-passthrough", "custom Skylake").
fn cpu_mode(r: &Element) -> String {
    match r.child("cpu") {
        None => "hypervisor default".to_string(),
        Some(c) => {
            let mode = c.attr("mode").unwrap_or("custom");
            match c.child("model").map(|m| m.text.as_str()) {
                Some(model) if !model.is_empty() => format!("{mode} {model}"),
                _ => mode.to_string(),
            }
        }
    }
}

/// What backs the memory ("hugepages(page=2048KiB) locked"), or "default".
fn memory_backing(r: &Element) -> String {
    r.child("memoryBacking")
        .map(|b| {
            b.children
                .iter()
                .map(|c| {
                    let detail: Vec<String> = c
                        .attrs
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .chain(c.all("page").map(|p| {
                            format!(
                                "page={}{}",
                                p.attr("size").unwrap_or("?"),
                                p.attr("unit").unwrap_or("KiB")
                            )
                        }))
                        .collect();
                    if detail.is_empty() {
                        c.name.clone()
                    } else {
                        format!("{}({})", c.name, detail.join(","))
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into())
}

/// Each disk's target, bus and cache (and io mode, when set).
fn disks(devices: &Element) -> Vec<String> {
    devices
        .all("disk")
        // A disk device, not a cdrom, floppy or LUN; libvirt's default.
        .filter(|k| matches!(k.attr("device"), None | Some("disk")))
        .map(|k| {
            let t = k.child("target");
            let drv = k.child("driver");
            format!(
                "{} bus={} cache={}{}",
                t.and_then(|t| t.attr("dev")).unwrap_or("?"),
                t.and_then(|t| t.attr("bus")).unwrap_or("default"),
                drv.and_then(|d| d.attr("cache")).unwrap_or("default"),
                drv.and_then(|d| d.attr("io"))
                    .map(|io| format!(" io={io}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// Each NIC's model and interface type ("virtio (network)").
fn nics(devices: &Element) -> Vec<String> {
    devices
        .all("interface")
        .map(|i| {
            format!(
                "{} ({})",
                i.child("model")
                    .and_then(|m| m.attr("type"))
                    .unwrap_or("default"),
                i.attr("type").unwrap_or("?")
            )
        })
        .collect()
}

/// A libvirt memory size in MiB ("1048576" KiB is "1024 MiB").
fn mib(value: &str, unit: &str) -> String {
    let Ok(n) = value.trim().parse::<u64>() else {
        return value.to_string();
    };
    let shift: Option<u32> = match unit {
        "b" | "bytes" => Some(0),
        "KB" => None,
        "k" | "KiB" => Some(10),
        "M" | "MiB" => Some(20),
        "G" | "GiB" => Some(30),
        "T" | "TiB" => Some(40),
        _ => None,
    };
    match shift {
        Some(s) => format!("{} MiB", (n as u128 * (1u128 << s)) >> 20),
        None => format!("{n} {unit}"),
    }
}

/// What `virsh domcapabilities` says about CPU modes for one domain type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuCaps {
    /// (mode, supported).
    pub modes: Vec<(String, bool)>,
    /// (named model, usable here).
    pub models: Vec<(String, bool)>,
}

impl CpuCaps {
    pub fn parse(text: &str) -> Result<CpuCaps, String> {
        let root = parse(text)?;
        let cpu = root
            .child("cpu")
            .ok_or("domain capabilities without <cpu>")?;
        let mut caps = CpuCaps::default();
        for mode in cpu.all("mode") {
            let name = mode.attr("name").unwrap_or_default().to_string();
            caps.modes
                .push((name.clone(), mode.attr("supported") == Some("yes")));
            if name == "custom" {
                for model in mode.all("model") {
                    caps.models
                        .push((model.text.clone(), model.attr("usable") != Some("no")));
                }
            }
        }
        Ok(caps)
    }

    pub fn mode_supported(&self, mode: &str) -> Option<bool> {
        self.modes.iter().find(|(m, _)| m == mode).map(|(_, s)| *s)
    }

    pub fn model_usable(&self, model: &str) -> Option<bool> {
        self.models
            .iter()
            .find(|(m, _)| m == model)
            .map(|(_, u)| *u)
    }

    /// A few usable named models, for a message.
    pub fn usable_models(&self, most: usize) -> Vec<&str> {
        self.models
            .iter()
            .filter(|(_, u)| *u)
            .map(|(m, _)| m.as_str())
            .take(most)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOMAIN: &str = r#"<?xml version="1.0"?>
<!-- a comment -->
<domain type='qemu' id='3'>
  <name>vm &amp; co</name>
  <memory unit='KiB'>1048576</memory>
  <memoryBacking><hugepages><page size='2048' unit='KiB'/></hugepages><nosharepages/></memoryBacking>
  <vcpu placement='static' current='1'>2</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='0'/><vcpupin vcpu='1' cpuset='1'/></cputune>
  <os><type arch='x86_64' machine='q35'>hvm</type><kernel>/k</kernel><initrd>/i</initrd></os>
  <cpu mode='custom' match='exact'><model fallback='forbid'>qemu64</model></cpu>
  <devices>
    <disk type='file' device='cdrom'><target dev='sdb' bus='sata'/></disk>
    <disk type='file' device='disk'><driver name='qemu' type='raw' cache='none' io='native'/>
      <source file='/d.img'/><target dev='vda' bus='virtio'/></disk>
    <interface type='user'><model type='virtio'/></interface>
    <serial type='file'><source path='/c.log'/><target port='0'/></serial>
    <serial type="unix"><source mode="bind" path="/run/x/agent.sock"/><target type='isa-serial' port="1"/></serial>
  </devices>
</domain>
"#;

    #[test]
    fn a_domain_gives_its_essentials_and_way_in() {
        let d = DomainXml::parse(DOMAIN).unwrap();
        let e = d.essentials();
        assert_eq!(e["vcpus"], "2 (current 1)");
        assert_eq!(e["pinning"], "0:0 1:1");
        assert_eq!(e["cpu"], "custom qemu64");
        assert_eq!(e["memory"], "1024 MiB");
        assert_eq!(e["memory backing"], "hugepages(page=2048KiB) nosharepages");
        assert_eq!(e["disks"], "vda bus=virtio cache=none io=native");
        assert_eq!(e["net"], "virtio (user)");
        assert_eq!(e["domain type"], "qemu");
        assert_eq!(
            d.ways_in(),
            vec![WayIn::Socket("/run/x/agent.sock".into()), WayIn::Network]
        );
        assert!(d.direct_boot());
        assert_eq!(
            parse(DOMAIN).unwrap().child("name").unwrap().text,
            "vm & co"
        );
    }

    #[test]
    fn a_bare_domain_has_no_way_in_and_says_defaults() {
        let d = DomainXml::parse("<domain type='kvm'><vcpu>1</vcpu><devices/></domain>").unwrap();
        assert!(d.ways_in().is_empty());
        let e = d.essentials();
        assert_eq!(e["cpu"], "hypervisor default");
        assert_eq!(e["pinning"], "none");
        assert_eq!(e["memory backing"], "default");
        assert_eq!(e["disks"], "none");
        assert_eq!(e["net"], "none");
    }

    #[test]
    fn broken_or_hostile_xml_is_refused() {
        for bad in [
            "",
            "<a>",
            "<a></b>",
            "</a>",
            "<a x=1/>",
            "<a x='1' x='2'/>",
            "<a>&bogus;</a>",
            "<a/><b/>",
            "text",
            "<!DOCTYPE a [<!ENTITY x 'y'>]><a/>",
            "<a><!-- open",
            "<a b='&#xD800;'/>",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "<a>".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).unwrap_err().contains("deeper"));
        assert!(DomainXml::parse("<network/>").is_err());
    }

    #[test]
    fn escaping_round_trips() {
        let hostile = "a'b\"c<d>&e";
        let doc = format!("<x v='{}'>{}</x>", escape(hostile), escape(hostile));
        let e = parse(&doc).unwrap();
        assert_eq!(e.attr("v"), Some(hostile));
        assert_eq!(e.text, hostile);
    }

    #[test]
    fn capabilities_tell_modes_and_models() {
        let caps = CpuCaps::parse(
            "<domainCapabilities><cpu><mode name='host-passthrough' supported='no'/>\
             <mode name='maximum' supported='yes'/><mode name='custom' supported='yes'>\
             <model usable='yes' vendor='unknown'>qemu64</model>\
             <model usable='no' vendor='Intel'>Skylake-Server</model></mode></cpu></domainCapabilities>",
        )
        .unwrap();
        assert_eq!(caps.mode_supported("host-passthrough"), Some(false));
        assert_eq!(caps.mode_supported("maximum"), Some(true));
        assert_eq!(caps.mode_supported("host-model"), None);
        assert_eq!(caps.model_usable("qemu64"), Some(true));
        assert_eq!(caps.model_usable("Skylake-Server"), Some(false));
        assert_eq!(caps.usable_models(5), vec!["qemu64"]);
    }
}
