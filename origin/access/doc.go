// Package access decides, for one request, what nginx's
// ngx_http_access_module (allow, deny) and ngx_http_referer_module
// (valid_referers, with the usual "if ($invalid_referer) { return 403; }")
// would decide: whether the client address and the Referer may fetch.
//
// # What it owns
//
//   - The syntax: nginx statements ("allow 10.0.0.0/8; deny all;",
//     "valid_referers none blocked *.example.com;"), with nginx's
//     tokens, quotes, backslash escapes and # comments ([Parse]).
//   - The address rules ([Rules]) and the referer list ([Referers]), and
//     the one verdict of both ([Policy.Check]).
//
// # What it never does
//
//   - No I/O, no HTTP types, no clock, no goroutines, no package-level
//     mutable state: the caller reads the file, the client address, the
//     Referer and the Host, and passes them in.
//   - It never decides who the client is: the caller passes the address
//     in force (the peer's, or the one a trusted proxy named).
//
// # The rules it keeps
//
//  1. Address rules are tried in order and the first that matches
//     decides (ngx_http_access_handler). None matching allows, as in
//     nginx, where the access phase then declines: close a list with
//     "deny all" to refuse the rest.
//  2. Families are kept apart as nginx keeps them: an IPv4 client is
//     tried against the IPv4 rules and "all" only, and is allowed when
//     there are none; an IPv6 client against the IPv6 rules and "all";
//     an IPv4-mapped IPv6 address counts as IPv4 when IPv4 rules exist
//     and as IPv6 otherwise. A client with no IP address (unknown) is
//     tried against "all" only (nginx's rule for a UNIX-domain peer).
//  3. A prefix with host bits set ("10.1.2.3/8") is masked
//     ("10.0.0.0/8") with a warning, as nginx does ("low address bits
//     ... are meaningless").
//  4. The referer is judged as ngx_http_referer_variable judges it: no
//     Referer is valid only with "none"; a Referer that does not start
//     with "http://" or "https://" (case-insensitive), or is shorter than
//     "http://i.ru", is valid only with "blocked"; otherwise its host (up
//     to the first '/' or ':', lowercased, under 256 bytes) is looked up
//     among exact names, then "*.name" and ".name" wildcards (the longest
//     suffix first), then "name.*" wildcards (the longest prefix first);
//     a name given with a path ("example.com/galleries/") also needs the
//     Referer's path to start with it, and a matched name whose path
//     differs is invalid without trying the expressions; the "~"
//     expressions are tried last, case-insensitively, on the Referer after
//     its scheme.
//  5. "server_names" stands for the request's own Host (port dropped):
//     this server has no server_name, and nginx picks the server block
//     whose name the Host matches.
//  6. Expressions are Go regular expressions (RE2: no look-around or
//     back-references), not PCRE; one that does not compile is refused.
//  7. The referer check runs before the address check: nginx's rewrite
//     phase, where the "if" answers 403, comes before its access phase.
package access
