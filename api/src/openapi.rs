//! The OpenAPI 3.1 document. Each module's operations come from its handlers' annotations
//! (route-specific parameters, bodies, descriptions); what every route shares comes from the
//! route table — security and scope, paging and window parameters with their defaults and
//! caps, the common error answers — so the document says what the code does.

use netops_shared::error::{ErrorBody, ErrorCode};
use netops_shared::http::conventions::COMPRESS_MIN_BYTES;
use netops_shared::routes::{
    Access, Kind, MCP_MAX_ANSWER_BYTES, MCP_MAX_BATCH, MCP_MODERN_VERSIONS, MCP_PROTOCOL_VERSIONS,
    ROUTES, Route, WindowRule, mcp_toolsets,
};
use netops_shared::window::PERIODS;
use serde_json::{Map, Value, json};
use utoipa::PartialSchema;
use utoipa::openapi::path::Paths;
use utoipa_axum::router::OpenApiRouter;

use netops_shared::collect::{CollectKind, DECOMPRESSED_LIMIT, LineError, WIRE_LIMIT};
use netops_shared::store::KEPT_REFUSALS;

use crate::{KINDS, router, tidy};

const DESCRIPTION: &str = "Interface HTTP/JSON des données d'un produit de supervision d'infrastructure : \
parc d'ordinateurs équipés de l'agent, diagnostic réseau par poste (NetDiag), flux réseau, alertes et moniteurs \
de disponibilité, inventaire et vulnérabilités, sécurité, bases de données, DNS, accès aux fichiers partagés, \
infrastructure réseau et pare-feux. Lecture seule, sauf trois écritures : acquitter une alerte, modifier les \
réglages NetDiag d'un poste, lancer une action de diagnostic.\n\n\
**Authentification** : en-tête `Authorization: Bearer <jeton>` sur toutes les routes sauf `/openapi.json` et \
`/docs`. Jeton absent, inconnu, expiré ou révoqué : 401. Portée manquante : 403, le corps nomme la portée dans `scope`.\n\n\
**Ordre des contrôles** : jeton (401), limite de débit (429), portée (403), paramètres (400), existence (404).\n\n\
**Dates** : toute date d'une réponse est au format RFC 3339 en UTC, à la milliseconde, sous une seule forme : \
`2026-11-28T16:00:02.232Z` (trois décimales, même nulles, et `Z`). Les dates envoyées (`from`, `to`) sont lues en \
RFC 3339 quelle que soit leur précision et leur décalage.\n\n\
**Erreurs** : corps `{error, message}` (plus `scope` sur un 403). Codes stables : {codes}. Message en français, en anglais si \
`Accept-Language` préfère `en`. Les paramètres inconnus sont ignorés ; une valeur invalide d'un paramètre connu \
donne 400 en le nommant, une valeur vide aussi (`?to=` : omettre le paramètre pour sa valeur par défaut). Corps de requête : 64 Kio au plus (413).\n\n\
**Limite de débit** : 600 appels par fenêtre de 60 s et par jeton, partagée par toutes les fonctions. Chaque \
réponse porte `X-RateLimit-Limit`, `X-RateLimit-Remaining` et `X-RateLimit-Reset` (secondes jusqu'à la fin de la \
fenêtre) ; au-delà, 429 avec `Retry-After`.\n\n\
**Exports** : chaque liste répond aussi à `Accept: text/csv` (RFC 4180, UTF-8, ligne d'en-tête, objets imbriqués \
aplatis en colonnes pointées comme `location.city`, listes écrites en JSON) et à `Accept: application/x-ndjson` (un \
objet JSON par ligne) : les lignes de ses pages JSON, sur toute la fenêtre filtrée, sans pagination (`limit` et \
`cursor` ignorés), en flux, pour un seul appel de la limite de débit ; au plus 100 000 lignes (`X-Export-Max-Rows`). Une liste sans \
curseur donne sa plus grande page, avec `X-Export-Truncated: true` si d'autres éléments correspondaient. \
Un `Accept` qui préfère JSON ou ne nomme aucun des deux formats garde JSON, comme les réponses qui ne sont pas des \
listes ; une requête refusée l'est en JSON.\n\n\
**Écritures idempotentes** : les trois écritures acceptent l'en-tête `Idempotency-Key` (1 à 255 caractères ASCII \
visibles, brut ou entre guillemets ; propre au jeton ; gardé 24 h). Une écriture acceptée garde sa réponse avec son \
changement d'état : la même requête (méthode, chemin et corps) renvoyée avec la même clé reçoit cette réponse, avec \
`Idempotent-Replayed: true`, sans second changement ni seconde entrée au journal des écritures. La même clé avec \
une autre requête donne 422 `idempotency_key_reused` ; une clé dont la première requête est en cours, 409 avec \
`Retry-After`. Une requête refusée (4xx, 503) ne garde rien : sa clé est libérée et un nouvel essai est jugé à \
nouveau.\n\n\
**HEAD** : toute route GET répond aussi à `HEAD`, avec le statut et les en-têtes du GET et sans corps (mêmes \
contrôles, un appel compté).\n\n\
**Compression** : selon `Accept-Encoding`, gzip ou brotli (`br`) ; toute autre valeur, ou une valeur mal formée, \
donne la réponse non compressée. Brotli est servi par `netops serve` ; les fonctions Lambda répondent en gzip \
seulement (leur paquet reste léger ; un CDN devant API Gateway peut servir brotli). Sont compressées les réponses textuelles (JSON, HTML, CSS, JavaScript) d'au moins \
{min_bytes} octets, jamais le rapport PDF ; elles portent `Vary: Accept-Encoding`.\n\n\
**GET conditionnel** : chaque réponse 200 d'un GET en JSON (et `/openapi.json`, la page `/docs` et ses fichiers) \
porte un `ETag` fort : les 128 premiers bits du SHA-256 des octets exacts de la réponse non compressée. Une réponse \
compressée est une autre représentation : son `ETag` prend le suffixe du codage (`\"<empreinte>-gzip\"`, \
`\"<empreinte>-br\"`). Les réponses JSON portent `Cache-Control: private, no-cache` : un navigateur les garde et les \
revalide avant chaque usage. Un `If-None-Match` qui correspond reçoit `304 Not Modified`, sans corps, avec l'`ETag` \
et les en-têtes de limite de débit. La comparaison est faible (RFC 9110) : `W/` est ignoré, et les étiquettes d'une \
même empreinte, quel que soit leur suffixe, se valent ; `*` correspond toujours. Un `If-None-Match` mal formé est \
ignoré (réponse complète). **Un 304 ne compte pas dans la limite de débit** : l'appel, compté avant la réponse \
(le 429 passe avant tout), est rendu, et `X-RateLimit-Remaining` en tient compte. Le serveur construit encore la \
réponse pour la comparer : le 304 économise le transfert et le quota, pas la lecture. Une réponse qui dépend \
de l'heure change d'un appel à l'autre et se revalide donc rarement : celle d'une fenêtre glissante \
(`meta.window` finit maintenant), et celle de `/alerts` tant qu'un incident y est en cours (son `duration_s` croît) ; \
avec une fenêtre fixe (`from` et `to`), les autres se revalident.\n\n\
**CORS** : désactivé par défaut. Avec une liste d'origines (`NETOPS_CORS_ORIGINS`, paramètre `CorsOrigins` du \
modèle SAM), une page servie par l'une d'elles peut appeler l'API depuis un navigateur : les requêtes de \
pré-vérification (`OPTIONS` avec `Access-Control-Request-Method`) sont répondues sans jeton et sans compter d'appel ; \
méthodes GET, HEAD, POST, PUT ; en-têtes admis `Authorization`, `Accept-Language`, `Content-Type`, `If-None-Match`, \
`Idempotency-Key`, `MCP-Protocol-Version` ; en-têtes exposés `X-RateLimit-Limit`, `X-RateLimit-Remaining`, \
`X-RateLimit-Reset`, `Retry-After`, `X-Request-Id`, `ETag`, `Idempotent-Replayed`, `X-Export-Max-Rows`, `X-Export-Truncated`. Jeton porteur, pas de cookie : \
pas de mode `credentials`. Une origine hors de la liste ne reçoit aucun en-tête CORS. Toute réponse porte \
`Vary: Origin` quand CORS est actif.\n\n\
**Fenêtres (W)** : `period` parmi 1h, 3h, 6h, 12h, 24h, 3d, 7d, 30d (fenêtre glissante finissant maintenant) ; \
`from`/`to` en RFC 3339. Avec `from` et `to`, `period` est ignoré ; avec `from` seul, de `from` à maintenant ; avec \
`to` seul, la période par défaut finissant à `to`. Une fenêtre plus longue que le maximum de la route est ramenée \
à sa partie la plus récente et `meta.window_capped` vaut true (clé absente sinon). Aucune fenêtre ne remonte \
au-delà de la rétention (`NETOPS_RETENTION_DAYS` : par défaut 90 jours dans le stockage embarqué, la plus \
longue fenêtre permise, et 400 sur AWS) : les données plus anciennes ont quitté le stockage, et une \
fenêtre qui la dépasse commence à la rétention, avec `meta.window_capped`. Chaque route fenêtrée renvoie \
`meta.window` : la fenêtre appliquée.\n\n\
**Pagination** : `limit` entier ≥ 1, ramené au maximum de la route s'il le dépasse (`meta.limit` donne la taille \
appliquée). `cursor` est opaque et signé, lié au compte, à la route et aux filtres : modifié ou réutilisé avec \
d'autres filtres, il donne 400 `invalid_cursor`. Un curseur reste valable 24 heures (réglage du déploiement) : plus ancien, il donne aussi 400 `invalid_cursor`, et la liste reprend depuis sa première page. `meta.next_cursor` vaut null sur la dernière page. Une liste sans curseur renvoie \
`meta.truncated` : true quand d'autres éléments correspondaient (resserrer la fenêtre ou les filtres), false sinon. Les listes \
datées vont du plus récent au plus ancien, sans doublon ni trou entre les pages ; le curseur conserve la fenêtre \
de la première page. Sur AWS, la lecture d'une page examine au plus 10 000 éléments : une page dont les filtres \
retiennent peu d'éléments (de la fenêtre, ou de la collection) peut en contenir moins que `limit`, voire aucun, avec un \
`meta.next_cursor` qui reprend où la lecture s'est arrêtée (une liste sans curseur le dit par `meta.truncated`). \
Seul un `meta.next_cursor` null marque la fin.\n\n\
**Géolocalisation** : le pays (ISO 3166-1 alpha-2) et l'opérateur (nom du système autonome) de l'adresse \
distante d'un flux sont fixés à sa collecte, d'après des données tierces sous licence Creative Commons \
Attribution 4.0 (CC BY 4.0) : pays d'IP to Country Lite de DB-IP (https://db-ip.com), opérateurs de RouteViews \
(https://www.routeviews.org), du NRO (https://www.nro.net) et d'IP to ASN Lite de DB-IP, réunis par \
ip-location-db. Une adresse privée est `local` (`réseau interne`), une adresse que ces données ne couvrent pas \
`inconnu`. Une application qui affiche ces valeurs doit citer cette attribution, que `/flows/explore` renvoie \
dans `meta.attribution`.";

/// [`DESCRIPTION`] with the stable error codes, listed from the one table.
fn description() -> String {
    let codes: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    DESCRIPTION
        .replace("{codes}", &codes.join(", "))
        .replace("{min_bytes}", &COMPRESS_MIN_BYTES.to_string())
}

fn secs_label(secs: i64) -> String {
    if secs % 86400 == 0 {
        format!("{} jours", secs / 86400)
    } else {
        format!("{} h", secs / 3600)
    }
}

/// The window parameters of a route: `period` with the route's default and cap in its
/// description, its values the one `Period` enum; `from` and `to`, the same everywhere.
fn window_params(rule: WindowRule) -> Vec<Value> {
    let cap = rule
        .max_secs
        .map(|m| format!(" Fenêtre de {} au plus : au-delà, ramenée à sa partie la plus récente, avec `meta.window_capped`.", secs_label(m)))
        .unwrap_or_default();
    vec![
        json!({"name": "period", "in": "query", "required": false,
            "description": format!("Fenêtre glissante finissant maintenant ; par défaut {}. Ignorée si `from` et `to` sont donnés.{cap}", secs_label(rule.default_secs)),
            "schema": {"$ref": "#/components/schemas/Period"}}),
        json!({"$ref": "#/components/parameters/From"}),
        json!({"$ref": "#/components/parameters/To"}),
    ]
}

/// The parameters every route with a cursor or a window shares word for word.
fn shared_parameters() -> Value {
    json!({
        "Cursor": {"name": "cursor", "in": "query", "required": false,
            "description": "Le `meta.next_cursor` de la page précédente, avec les mêmes filtres.",
            "schema": {"type": "string"}},
        "From": {"name": "from", "in": "query", "required": false,
            "description": "Début de la fenêtre (RFC 3339). Seul : jusqu'à maintenant.",
            "schema": {"type": "string", "format": "date-time"}},
        "To": {"name": "to", "in": "query", "required": false,
            "description": "Fin de la fenêtre (RFC 3339), après `from`. Seul : la période par défaut finissant à `to`.",
            "schema": {"type": "string", "format": "date-time"}},
    })
}

/// The name of a parameter, declared inline or as a reference to a shared one.
fn param_name(p: &Value) -> String {
    match p["$ref"].as_str() {
        Some(r) => r.rsplit('/').next().unwrap_or("").to_lowercase(),
        None => p["name"].as_str().unwrap_or("").to_owned(),
    }
}

fn common_params(route: &Route) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(p) = route.paging {
        out.push(json!({"name": "limit", "in": "query", "required": false,
            "description": format!("Taille de page : {} par défaut, {} au plus (une valeur plus grande est ramenée à {}).", p.default, p.max, p.max),
            "schema": {"$ref": "#/components/schemas/Limit", "default": p.default}}));
        if p.cursor {
            out.push(json!({"$ref": "#/components/parameters/Cursor"}));
        }
    }
    if let Some(w) = route.window {
        out.extend(window_params(w));
    }
    out
}

fn error_response(description: &str) -> Value {
    json!({"description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
}

fn rate_headers() -> Value {
    json!({
        "X-RateLimit-Limit": {"$ref": "#/components/headers/X-RateLimit-Limit"},
        "X-RateLimit-Remaining": {"$ref": "#/components/headers/X-RateLimit-Remaining"},
        "X-RateLimit-Reset": {"$ref": "#/components/headers/X-RateLimit-Reset"},
        "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
    })
}

/// `POST /mcp`. Its handler is in the MCP function, which builds its tools from this document
/// and so cannot be one of its sources: the operation is described here.
fn mcp_operation() -> Value {
    let versions = MCP_PROTOCOL_VERSIONS.join(", ");
    let modern = MCP_MODERN_VERSIONS.join(", ");
    let every: Vec<&str> = MCP_MODERN_VERSIONS
        .iter()
        .chain(MCP_PROTOCOL_VERSIONS)
        .copied()
        .collect();
    let toolsets = mcp_toolsets().join(", ");
    // One toolset or more, comma-separated.
    let one = mcp_toolsets().join("|");
    let toolsets_pattern = format!("^({one})(,({one}))*$");
    let answer_mib = MCP_MAX_ANSWER_BYTES / (1024 * 1024);
    json!({
        "operationId": "mcp",
        "tags": ["mcp"],
        "summary": "Point d'entrée des assistants IA (MCP)",
        "description": format!("JSON-RPC 2.0 sur HTTP « streamable » sans état (MCP {versions}, négociées par \
    `initialize`) : `initialize`, `tools/list`, `tools/call`, `ping`. MCP {modern}, sans poignée de main : chaque \
    requête porte sa version et les capacités du client dans `params._meta`, et les en-têtes `MCP-Protocol-Version`, \
    `Mcp-Method` (et `Mcp-Name` pour `tools/call`) répètent le corps (sinon -32020, statut 400) ; méthodes \
    `server/discover`, `tools/list`, `tools/call` ; chaque résultat porte `resultType`, les listes et `server/discover` \
    `ttlMs` et `cacheScope: private` ; une méthode inconnue, dont `subscriptions/listen` (aucun flux n'est tenu \
    ouvert), reçoit -32601 avec le statut 404, une version non prise en charge -32022 (statut 400). Chaque message est un POST portant le même jeton ; \
    les notifications reçoivent 202 sans corps ; GET et DELETE donnent 405. Un outil par route de lecture JSON, \
    nommé par son operationId ; `tools/list` ne montre que les outils couverts par les portées du jeton, par pages \
    d'au plus 56 Kio (`nextCursor`, à repasser comme `cursor`). Chaque outil porte un `outputSchema` (le schéma de la \
    réponse 200 de sa route, autonome sous `$defs`). Descriptions en anglais, en français si `Accept-Language` le préfère. \
    `tools/call` passe par la route REST : mêmes contrôles de portée et de paramètres, un appel compté dans la \
    limite de débit. Résultat : le corps REST dans `content[0].text` et `structuredContent` ; une erreur REST donne \
    `isError: true`. Erreurs JSON-RPC : -32700 corps illisible, -32600 requête invalide (ces deux-là avec le statut \
    400), -32601 méthode inconnue, -32602 outil inconnu ou arguments invalides, -32000 réponse trop volumineuse. \
    En-tête `MCP-Protocol-Version` non pris en charge : 400 ; sans cet en-tête, le protocole est 2025-03-26.\n\n\
    Jeux d'outils. `?toolsets=` sur l'URL, avec des modules séparés par des virgules ({toolsets}), ne montre et \
    n'appelle que leurs outils ; un module inconnu donne -32600 (statut 400).\n\n\
    Limites. Un lot JSON-RPC (tableau) n'est admis que sous le protocole 2025-03-26 (2025-06-18 a retiré les lots) \
    et compte au plus {MCP_MAX_BATCH} messages ; sinon le lot entier reçoit une erreur -32600 (statut 400) et rien n'est \
    exécuté. Chaque POST compte un appel dans la limite de débit, qui couvre son premier `tools/call` ; chaque \
    `tools/call` suivant d'un lot compte un appel de plus, avant tout contrôle, comme un appel REST. Un appel au-delà \
    du quota revient en résultat d'outil `isError: true` avec le corps REST 429 (`rate_limited`), et \
    `X-RateLimit-Remaining` (avec `Retry-After` une fois le quota dépassé) tient compte de tous les appels du \
    POST. La réponse fait au plus {answer_mib} Mio ({MCP_MAX_ANSWER_BYTES} octets) : la première réponse qui n'y tient plus \
    et chaque requête suivante du lot (alors ni exécutée ni comptée) reçoivent à leur place l'erreur -32000, \
    `data.limit_bytes` donnant la limite ; il suffit de les renvoyer dans un autre POST."),
        "parameters": [{"name": "MCP-Protocol-Version", "in": "header", "required": false,
            "description": format!("Version du protocole : négociée ({versions}), ou celle de la requête ({modern})."),
            "schema": {"type": "string", "enum": every}},
            {"name": "Mcp-Method", "in": "header", "required": false,
                "description": format!("MCP {modern} : la méthode du corps."), "schema": {"type": "string"}},
            {"name": "Mcp-Name", "in": "header", "required": false,
                "description": format!("MCP {modern} : le nom de l'outil appelé."), "schema": {"type": "string"}},
            {"name": "toolsets", "in": "query", "required": false,
                "description": format!("Les modules dont montrer les outils, séparés par des virgules ({toolsets}) ; tous sans ce paramètre."),
                "schema": {"type": "string", "pattern": toolsets_pattern}}],
        "requestBody": {"required": true, "description": "Un message JSON-RPC 2.0, ou un lot (tableau) de messages.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcMessage"}}}},
        "responses": {
            "200": {"description": "Réponse JSON-RPC (un tableau pour un lot)",
                "content": {"application/json": {"schema": {"oneOf": [
                    {"$ref": "#/components/schemas/JsonRpcResponse"},
                    {"type": "array", "items": {"$ref": "#/components/schemas/JsonRpcResponse"}}]}}}},
            "202": {"description": "Notification ou réponse reçue, sans corps"},
            "400": {"description": format!("Corps illisible (-32700), message invalide (-32600), lot refusé (-32600 : plus de \
                {MCP_MAX_BATCH} messages, ou protocole 2025-06-18 et suivants), version de protocole non prise en charge \
                ou jeu d'outils inconnu ; sous MCP {modern}, aussi paramètres invalides (-32602), en-têtes contraires au \
                corps (-32020) et version non prise en charge (-32022)"),
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
            "404": {"description": format!("MCP {modern} : méthode inconnue (-32601), dont `subscriptions/listen`"),
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}},
            "413": error_response("Corps de plus de 64 Kio (`payload_too_large`)"),
        },
    })
}

/// `POST /collect/{kind}`. Its handler is in the collect function, which links the kinds'
/// writers through this crate: the operation is described here, from [`KINDS`], with the
/// schema of one observation of each kind (docs/collect.md).
fn collect_operation() -> Value {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    let text: Vec<&str> = KINDS
        .iter()
        .filter(|k| k.text_field.is_some())
        .map(|k| k.name)
        .collect();
    let agent_kinds: Vec<String> = KINDS
        .iter()
        .filter(|k| k.agents)
        .map(|k| format!("`{}`", k.name))
        .collect();
    let one_of: Vec<Value> = KINDS
        .iter()
        .map(|k| json!({"$ref": format!("#/components/schemas/{}", kind_schema_name(k))}))
        .collect();
    let wire_mib = WIRE_LIMIT / (1024 * 1024);
    let decompressed_mib = DECOMPRESSED_LIMIT / (1024 * 1024);
    let codes: Vec<String> = LineError::ALL
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    json!({
        "operationId": "collect",
        "tags": ["collect"],
        "summary": "Envoyer un lot d'observations (collecte)",
        "description": format!("Un lot d'observations brutes d'un type (`kind`), envoyé par un collecteur avec un \
    jeton de collecte (portées `collect:<module>`, jamais dans `all`, qui ne lit rien de l'API : `/me` lui répond 403), \
    ou par l'agent d'une machine avec son identité d'agent, pour les types d'un agent ({agent_kinds}) et sa seule \
    machine : une ligne d'une autre machine est refusée (`unknown_reference`), qu'elle existe ou non. \
    Le compte est celui du jeton, jamais celui du corps. Corps NDJSON (`application/x-ndjson`, une observation par \
    ligne, au schéma de son type) ; les types syslog ({text}) acceptent aussi des lignes brutes (`text/plain`). \
    `Content-Encoding: gzip` accepté. Au plus {wire_mib} Mio tel qu'envoyé et {decompressed_mib} Mio décompressé, compté \
    pendant la lecture : au-delà, 413 avant que la mémoire ne grandisse.\n\n\
    Chaque ligne est acceptée ou refusée seule : la réponse 200 compte les lignes acceptées et refusées et liste \
    les refusées (au plus {kept} : numéro de ligne, code, message), codes {codes}. Une date plus de 5 minutes dans \
    le futur ou antérieure à la rétention est refusée. Un lot sans ligne valide : 400. Les lignes vides sont \
    ignorées.\n\n\
    Idempotence : l'identité du lot est son en-tête `Idempotency-Key`, sinon le SHA-256 de son corps décompressé. \
    Le même lot renvoyé (par le même collecteur ou un autre, même en même temps) ne change rien et reçoit la \
    réponse de la première fois, avec `Idempotent-Replayed: true`. Un lot compte un appel dans la limite de \
    débit. Chaque lot accepté est inscrit au journal d'ingestion (identité, type, comptes, refus, heure), gardé \
    comme le journal des écritures. Les données dérivées (agrégats, rapport) sont calculées par le produit, \
    jamais envoyées. 503 : renvoyer le même lot, il ne sera compté qu'une fois.",
            text = text.join(", "), kept = KEPT_REFUSALS, codes = codes.join(", "),
            agent_kinds = agent_kinds.join(", ")),
        "parameters": [
            {"name": "kind", "in": "path", "required": true,
                "description": "Le type des observations du lot.",
                "schema": {"type": "string", "enum": names}},
            {"name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Identité du lot (1 à 255 caractères ASCII visibles) ; sans elle, le SHA-256 du corps décompressé.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}},
            {"name": "Content-Encoding", "in": "header", "required": false,
                "description": "`gzip` pour un corps compressé.",
                "schema": {"type": "string", "enum": ["gzip", "identity"]}},
        ],
        "requestBody": {"required": true,
            "description": "Une observation par ligne.",
            "content": {
                "application/x-ndjson": {"schema": {"oneOf": one_of}},
                "text/plain": {"schema": {"type": "string",
                    "description": format!("Lignes brutes, une par ligne (types {}).", text.join(", "))}},
            }},
        "responses": {
            "200": {"description": "Le lot reçu : lignes acceptées et refusées",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope_Ingested"}}}},
            "400": error_response("Corps illisible, type de contenu ou codage non pris en charge, ou aucune ligne valide (`invalid_body`, avec `refusals`) ; `Idempotency-Key` invalide (`invalid_parameter`)"),
            "403": error_response("Jeton sans la portée `collect:<module>` du type (`forbidden`, champ `scope`), ou jeton qui n'est pas de collecte"),
            "404": error_response("Type inconnu (`not_found`, avec `admitted_kinds`)"),
            "413": error_response(&format!("Lot de plus de {wire_mib} Mio tel qu'envoyé ou de {decompressed_mib} Mio décompressé (`payload_too_large`)")),
            "503": error_response("Stockage indisponible (`service_unavailable`) : renvoyer le même lot"),
        },
    })
}

/// The component name of a kind's observation schema: `firewall-syslog` →
/// `CollectFirewallSyslog`.
fn kind_schema_name(kind: &CollectKind) -> String {
    let camel: String = kind
        .name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("Collect{camel}")
}

/// The answer to a batch, and each kind's observation schema.
fn collect_schemas() -> Value {
    let mut schemas = json!({
        "Envelope_Ingested": {"type": "object", "required": ["data", "meta"],
            "properties": {
                "data": {"$ref": "#/components/schemas/Ingested"},
                "meta": {"type": "object", "additionalProperties": false}}},
        "Ingested": {"type": "object",
            "required": ["batch_id", "kind", "received_at", "accepted", "refused", "refusals", "refusals_truncated"],
            "properties": {
                "batch_id": {"type": "string", "description": "Identité du lot : son type, puis `key/<Idempotency-Key>` ou `sha256/<empreinte du corps décompressé>`."},
                "kind": {"type": "string"},
                "received_at": {"type": "string", "format": "date-time", "description": "Quand le lot a été reçu la première fois."},
                "accepted": {"type": "integer", "minimum": 0},
                "refused": {"type": "integer", "minimum": 0},
                "refusals": {"type": "array", "items": {"$ref": "#/components/schemas/LineRefusal"}},
                "refusals_truncated": {"type": "boolean", "description": "D'autres lignes refusées ne sont pas listées."}}},
        "LineErrorCode": {"type": "string", "description": "Pourquoi une ligne est refusée.",
            "enum": LineError::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>()},
        "LineRefusal": {"type": "object", "required": ["line", "error", "message"],
            "properties": {
                "line": {"type": "integer", "minimum": 1, "description": "Numéro de la ligne dans le lot, à partir de 1."},
                "error": {"$ref": "#/components/schemas/LineErrorCode"},
                "message": {"type": "string"}}},
    });
    for kind in KINDS {
        schemas[kind_schema_name(kind)] = (kind.schema)();
    }
    schemas
}

fn json_rpc_schemas() -> Value {
    json!({
        "JsonRpcMessage": {"oneOf": [
            {"$ref": "#/components/schemas/JsonRpcRequest"},
            {"type": "array", "minItems": 1, "maxItems": MCP_MAX_BATCH,
                "description": "Lot, sous le protocole 2025-03-26 seulement.",
                "items": {"$ref": "#/components/schemas/JsonRpcRequest"}}]},
        "JsonRpcRequest": {"type": "object", "required": ["jsonrpc", "method"],
            "description": "Requête (avec `id`) ou notification (sans `id`).",
            "properties": {
                "jsonrpc": {"type": "string", "enum": ["2.0"]},
                "id": {"type": ["string", "integer"]},
                "method": {"type": "string", "examples": ["initialize", "server/discover", "tools/list", "tools/call", "ping"]},
                "params": {"type": "object", "description": "Pour `tools/call` : `name` et `arguments`."}}},
        "JsonRpcResponse": {"type": "object", "required": ["jsonrpc"],
            "properties": {
                "jsonrpc": {"type": "string", "enum": ["2.0"]},
                "id": {"type": ["string", "integer", "null"]},
                "result": {"type": "object"},
                "error": {"type": "object", "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}}}},
    })
}

/// Whether a route's 200 carries an `ETag` and answers `If-None-Match` with a 304: every
/// `GET` but the PDF report.
fn conditional(route: &Route) -> bool {
    route.method.as_str() == "GET" && route.kind != Kind::Document
}

/// The `ETag` and the 304 of a conditional route; `rate`: the 304 with the rate-limit headers
/// (every route but the public ones).
fn add_conditional(op: &mut Map<String, Value>, rate: bool) {
    let params = op.entry("parameters").or_insert_with(|| json!([]));
    if let Some(list) = params.as_array_mut() {
        list.push(json!({"$ref": "#/components/parameters/If-None-Match"}));
    }
    let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(ok) = responses.get_mut("200").and_then(Value::as_object_mut) {
        let own = ok.entry("headers").or_insert_with(|| json!({}));
        if let Some(own) = own.as_object_mut() {
            own.insert("ETag".into(), json!({"$ref": "#/components/headers/ETag"}));
        }
    }
    let name = if rate {
        "NotModified"
    } else {
        "NotModifiedPublic"
    };
    responses.insert(
        "304".into(),
        json!({"$ref": format!("#/components/responses/{name}")}),
    );
}

/// The two 304 answers [`add_conditional`] refers to.
fn not_modified_responses() -> Value {
    let description = "Non modifié : `If-None-Match` correspond à l'`ETag` de la réponse. Sans corps ; \
        ne compte pas dans la limite de débit.";
    let mut headers = rate_headers();
    headers["ETag"] = json!({"$ref": "#/components/headers/ETag"});
    json!({
        "NotModified": {"description": description, "headers": headers},
        "NotModifiedPublic": {"description": description,
            "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}},
    })
}

/// Completes one operation from its route-table entry.
fn complete(op: &mut Map<String, Value>, route: &Route) {
    let params = op.entry("parameters").or_insert_with(|| json!([]));
    if let Some(list) = params.as_array_mut() {
        let mut common = common_params(route);
        common.retain(|p| !list.iter().any(|q| param_name(q) == param_name(p)));
        list.extend(common);
    }
    if op["parameters"].as_array().is_some_and(Vec::is_empty) {
        op.remove("parameters");
    }
    if route.access == Access::Public {
        op.insert("security".into(), json!([]));
        if conditional(route) {
            add_conditional(op, false);
        }
        return;
    }
    let has_input = op.contains_key("parameters") || op.contains_key("requestBody");
    let scope = route.scope().map(|s| s.as_str());
    let mut responses = match op.remove("responses") {
        Some(Value::Object(r)) => r,
        _ => Map::new(),
    };
    let write = route.kind == Kind::Write;
    for (status, res) in responses.iter_mut() {
        if status.starts_with('2')
            && let Some(r) = res.as_object_mut()
        {
            let mut headers = rate_headers();
            if write || route.kind == Kind::Collect {
                headers["Idempotent-Replayed"] =
                    json!({"$ref": "#/components/headers/Idempotent-Replayed"});
            }
            r.insert("headers".into(), headers);
        }
    }
    let list = responses
        .get("200")
        .and_then(|r| r["content"]["application/json"]["schema"]["$ref"].as_str())
        .is_some_and(|r| r.starts_with("#/components/schemas/Envelope_Vec_"));
    if list && let Some(content) = responses["200"]["content"].as_object_mut() {
        content.insert(
            "text/csv".into(),
            json!({"schema": {"type": "string",
                "description": "Export CSV de toute la fenêtre filtrée (voir « Exports »)"}}),
        );
        content.insert(
            "application/x-ndjson".into(),
            json!({"schema": {"type": "string",
                "description": "Export NDJSON de toute la fenêtre filtrée (voir « Exports »)"}}),
        );
    }
    if write {
        let params = op.entry("parameters").or_insert_with(|| json!([]));
        if let Some(list) = params.as_array_mut() {
            list.push(json!({"name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Clé d'idempotence (1 à 255 caractères ASCII visibles, propre au jeton, gardée 24 h) : \
                    la même requête renvoyée avec la même clé reçoit la première réponse, sans second effet.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}}));
        }
        responses.entry("409").or_insert_with(|| {
            error_response("Requête de même clé d'idempotence encore en cours (`conflict`) : réessayer après `Retry-After`")
        });
        responses.insert(
            "422".into(),
            error_response(
                "Clé d'idempotence déjà utilisée pour une autre requête (`idempotency_key_reused`)",
            ),
        );
    }
    if route.path.contains('{') {
        responses
            .entry("404")
            .or_insert_with(|| error_response("Ressource inconnue dans ce compte (`not_found`)"));
    }
    if op.contains_key("requestBody") {
        responses
            .entry("413")
            .or_insert_with(|| error_response("Corps de plus de 64 Kio (`payload_too_large`)"));
    }
    if has_input {
        responses
            .entry("400")
            .or_insert_with(|| error_response("Paramètre ou corps invalide (`invalid_parameter`, `invalid_cursor`, `invalid_body`)"));
    }
    responses.insert(
        "401".into(),
        error_response("Jeton absent, inconnu, expiré ou révoqué (`unauthorized`)"),
    );
    if let Some(scope) = scope {
        responses.insert(
            "403".into(),
            error_response(&format!(
                "Le jeton n'a pas la portée `{scope}` (`forbidden`, champ `scope`)"
            )),
        );
    }
    responses.insert(
        "429".into(),
        error_response(
            "Limite de débit dépassée (`rate_limited`) : attendre `Retry-After` secondes",
        ),
    );
    responses.entry("500").or_insert_with(|| {
        error_response("Erreur interne (`internal_error`) : réessayer plus tard")
    });
    op.insert("responses".into(), Value::Object(responses));
    if conditional(route) {
        add_conditional(op, true);
    }
    op.insert(
        "security".into(),
        json!([{"bearer": scope.into_iter().collect::<Vec<_>>()}]),
    );
    op.insert("x-scope".into(), json!(scope.unwrap_or("")));
}

/// Links from each list to the operations on one of its items: `/machines` gives the
/// `hostname` of `/machines/{hostname}` and of `/netdiag/machines/{hostname}/…` through
/// `/netdiag/machines`, and so on. Generators and stateful testers follow them; the rule is
/// that an item's route extends its list's path with a parameter named as the item's field.
fn add_links(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    // (list path, target operation, its parameter, the field of the list's first item)
    let mut links: Vec<(String, String, String, String)> = Vec::new();
    for (path, item) in paths.iter() {
        let Some((list, rest)) = path.split_once("/{") else {
            continue;
        };
        let Some((param, _)) = rest.split_once('}') else {
            continue;
        };
        let Some(item) = item.as_object() else {
            continue;
        };
        for op in item.values() {
            if let Some(id) = op["operationId"].as_str() {
                links.push((
                    list.to_owned(),
                    id.to_owned(),
                    param.to_owned(),
                    param.to_owned(),
                ));
            }
        }
    }
    // A deployment is listed inside its profile.
    links.push((
        "/profiles".into(),
        "compare_profile_deployment".into(),
        "id".into(),
        "deployments/0/id".into(),
    ));
    for (list, target, param, field) in links {
        let Some(ok) = paths
            .get_mut(&list)
            .and_then(|i| i.get_mut("get"))
            .and_then(|op| op.get_mut("responses"))
            .and_then(|r| r.get_mut("200"))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let is_list = ok["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("#/components/schemas/Envelope_Vec_"));
        if !is_list {
            continue;
        }
        let own = ok.entry("links").or_insert_with(|| json!({}));
        own[target.as_str()] = json!({"operationId": target,
            "description": format!("`{param}` : `{field}` du premier élément de la liste"),
            "parameters": {param.as_str(): format!("$response.body#/data/0/{field}")}});
    }
}

/// The whole document, as JSON: every data module's operations, `own` (the docs function's
/// page, from its annotations: its build script passes them, and the MCP function, which has
/// no tool for them, passes none), and `POST /mcp`.
pub fn openapi(own: Paths) -> Value {
    let own = utoipa::openapi::OpenApiBuilder::new().paths(own).build();
    let (_, api) = OpenApiRouter::with_openapi(own)
        .merge(router())
        .merge(netops_agent::routes())
        .split_for_parts();
    let mut doc = serde_json::to_value(api).unwrap_or_default();
    doc["info"] = json!({
        "title": "Network Operations Public API",
        "version": "1.7.0",
        "description": description(),
    });
    doc["servers"] = json!([{"url": "/api/v1", "description": "Base versionnée de cette console"}]);
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        paths.insert("/mcp".into(), json!({"post": mcp_operation()}));
        paths.insert(
            "/collect/{kind}".into(),
            json!({"post": collect_operation()}),
        );
    }
    for route in ROUTES {
        let method = route.method.as_str().to_lowercase();
        let op = doc
            .get_mut("paths")
            .and_then(|p| p.get_mut(route.path))
            .and_then(|i| i.get_mut(&method))
            .and_then(Value::as_object_mut);
        if let Some(op) = op {
            complete(op, route);
        }
    }
    let components = doc
        .as_object_mut()
        .map(|d| d.entry("components").or_insert_with(|| json!({})));
    if let Some(c) = components {
        c["securitySchemes"] = json!({"bearer": {"type": "http", "scheme": "bearer",
            "description": "Jeton d'accès `nop_…` d'un compte client, avec sa liste de portées."}});
        c["headers"] = json!({
            "X-RateLimit-Limit": {"description": "Appels permis par fenêtre de 60 s", "schema": {"type": "integer"}},
            "X-RateLimit-Remaining": {"description": "Appels restants dans la fenêtre", "schema": {"type": "integer"}},
            "X-RateLimit-Reset": {"description": "Secondes jusqu'à la fin de la fenêtre", "schema": {"type": "integer"}},
            "X-Request-Id": {"description": "Identifiant de la requête, repris dans les journaux", "schema": {"type": "string"}},
            "Idempotent-Replayed": {"description": "`true` quand la réponse est celle, gardée, de la première requête de même `Idempotency-Key`", "schema": {"type": "string", "enum": ["true"]}},
            "ETag": {"description": "Étiquette forte de la représentation : 128 premiers bits du SHA-256 des octets \
                de la réponse non compressée, en hexadécimal, avec le suffixe `-gzip` ou `-br` si la réponse est compressée",
                "schema": {"type": "string", "examples": ["\"44136fa355b3678a1146ad16f7e8649e\""]}},
        });
        c["responses"] = not_modified_responses();
        c["parameters"] = shared_parameters();
        c["parameters"]["If-None-Match"] = json!({"name": "If-None-Match", "in": "header", "required": false,
                "description": "`ETag` d'une réponse déjà reçue (ou plusieurs, séparés par des virgules, ou `*`) : \
                    s'il correspond, la réponse est 304 sans corps, et l'appel ne compte pas dans la limite de débit. \
                    Mal formé : ignoré.",
                "schema": {"type": "string"}});
        if c.get("schemas").is_none() {
            c["schemas"] = json!({});
        }
        c["schemas"]["ErrorBody"] = serde_json::to_value(ErrorBody::schema()).unwrap_or_default();
        let periods: Vec<&str> = PERIODS.iter().map(|(p, _)| *p).collect();
        c["schemas"]["Period"] = json!({"type": "string", "enum": periods,
            "description": "Fenêtre glissante finissant maintenant."});
        c["schemas"]["Limit"] = json!({"type": "integer", "minimum": 1,
            "description": "Taille de page ; une valeur au-delà du maximum de la route y est ramenée."});
        if let (Some(schemas), Value::Object(rpc), Value::Object(collect)) = (
            c["schemas"].as_object_mut(),
            json_rpc_schemas(),
            collect_schemas(),
        ) {
            schemas.extend(rpc);
            schemas.extend(collect);
        }
    }
    let full_meta = doc["components"]["schemas"]
        .as_object_mut()
        .and_then(|s| s.remove("Meta"))
        .unwrap_or_default();
    tidy::route_metas(&mut doc, &tidy::meta_properties(&full_meta), ROUTES);
    add_links(&mut doc);
    tidy::binary_as_strings(&mut doc);
    tidy::optional_bodies(&mut doc);
    tidy::non_empty_query_strings(&mut doc);
    tidy::share_named_schemas(&mut doc);
    doc
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::MODULES;

    /// Client generators name a class per schema: every named schema is reached from an
    /// operation, no envelope copies its item inline, and the shapes clients meet on every
    /// route are typed.
    #[test]
    fn every_named_schema_is_referenced_and_shared_shapes_are_declared_once() {
        let doc = openapi(Paths::new());
        assert_eq!(
            crate::tidy::unreferenced_schemas(&doc),
            Vec::<String>::new()
        );
        let schemas = &doc["components"]["schemas"];
        let text = doc.to_string();
        let dangling: Vec<&str> = text
            .split("\"#/components/schemas/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|name| schemas[*name].is_null())
            .collect();
        assert!(dangling.is_empty(), "references to no schema: {dangling:?}");
        assert_eq!(
            schemas["Envelope_Vec_Machine"]["properties"]["data"]["items"],
            json!({"$ref": "#/components/schemas/Machine"})
        );
        // Each route's `meta` declares the keys it answers, and those alone.
        let meta = |op: &str| {
            let name = doc["paths"]
                .as_object()
                .into_iter()
                .flat_map(|p| p.values())
                .flat_map(|item| item.as_object().into_iter().flat_map(|i| i.values()))
                .find(|o| o["operationId"] == op)
                .and_then(|o| {
                    o["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].as_str()
                })
                .and_then(|r| r.rsplit('/').next())
                .unwrap_or_default()
                .to_owned();
            let meta = &schemas[&name]["properties"]["meta"]["$ref"];
            let meta = meta
                .as_str()
                .and_then(|r| r.rsplit('/').next())
                .unwrap_or_default();
            let keys: Vec<&str> = schemas[meta]["properties"]
                .as_object()
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            (meta.to_owned(), keys)
        };
        assert_eq!(
            meta("list_flows"),
            (
                "ListFlowsMeta".into(),
                vec!["limit", "next_cursor", "window", "window_capped"]
            )
        );
        assert_eq!(meta("list_security_rules").1, vec!["global", "tenant"]);
        assert_eq!(meta("get_me").1, Vec::<&str>::new());
        assert_eq!(
            meta("list_alerts").1,
            vec!["limit", "total", "truncated", "window", "window_capped"]
        );
        for route in ROUTES {
            for key in route.meta {
                assert!(meta(route.op).1.contains(key), "{}: {key}", route.op);
            }
        }
        let cursor = &doc["components"]["parameters"]["Cursor"]["schema"];
        assert_eq!(cursor["minLength"], 1, "an empty cursor is refused");
        for field in [
            "scope",
            "parameter",
            "field",
            "admitted_keys",
            "current_status",
        ] {
            assert!(
                schemas["ErrorBody"]["properties"][field].is_object(),
                "{field}"
            );
        }
        let flows = &doc["paths"]["/flows"]["get"]["parameters"];
        let period = flows
            .as_array()
            .and_then(|l| l.iter().find(|p| p["name"] == "period"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            period["schema"],
            json!({"$ref": "#/components/schemas/Period"})
        );
        let ack = &doc["paths"]["/alerts/{id}/ack"]["post"];
        assert_eq!(ack["requestBody"]["required"], false);
        for status in ["400", "401", "403", "404", "409", "413", "429"] {
            assert!(ack["responses"][status].is_object(), "ack {status}");
        }
    }

    /// Components are merged by name: two modules declaring different schemas under one name
    /// would silently document one of them for both.
    #[test]
    fn no_two_modules_declare_different_schemas_under_one_name() {
        let mut seen: BTreeMap<String, (&str, Value)> = BTreeMap::new();
        let mut clashes = Vec::new();
        for module in MODULES {
            let (_, api) = OpenApiRouter::new()
                .merge((module.routes)())
                .split_for_parts();
            let doc = serde_json::to_value(api).unwrap_or_default();
            let Some(schemas) = doc["components"]["schemas"].as_object() else {
                continue;
            };
            for (name, schema) in schemas {
                let here = module.function.name();
                match seen.get(name) {
                    Some((other, s)) if s != schema => {
                        clashes.push(format!("{name}: {other} and {here}"));
                    }
                    Some(_) => {}
                    None => {
                        seen.insert(name.clone(), (here, schema.clone()));
                    }
                }
            }
        }
        assert!(clashes.is_empty(), "schema name clashes: {clashes:#?}");
    }
}
