//! Inventory handlers (docs/modules.md#inventory): thin, over the document primitives.

use axum::extract::State;
use netops_shared::lookup::Lookup;
use netops_shared::paging::docs_page;
use netops_shared::route;
use netops_shared::store::{Filter, Pred};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Path, Query};
use serde_json::json;

use crate::model::{
    ASSET_SOFTWARE, ASSET_SOFTWARE_MAX, ASSETS, Asset, AssetDetail, AssetSoftwareDoc, AssetsQuery,
    CVE_RECORDS, CveRecord, CvesQuery, EolStatus, Flag, SOFTWARE, Software, SoftwareQuery,
    asset_key,
};

/// A search text, trimmed; blank means no filter.
fn text(q: &Option<String>) -> Option<String> {
    q.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Inventaire des machines
///
/// Machines inventoriées (les mêmes que `/machines`) avec FQDN, adresses IP, système et
/// matériel, triées par identifiant, paginées par curseur (100 par défaut, 500 au plus).
/// `q` cherche un texte partiel, sans casse, dans le nom d'hôte, le FQDN, les adresses IP et
/// le système.
#[route(list_assets,
    params(AssetsQuery),
    responses((status = 200, description = "Une page d'actifs", body = Envelope<Vec<Asset>>)))]
pub async fn list_assets(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<AssetsQuery>,
) -> ApiResult<Vec<Asset>> {
    let q = AssetsQuery { q: text(&q.q) };
    let filter = Filter::all().and_some(q.q.clone(), |s| {
        Pred::Contains(vec!["hostname", "fqdn", "search_ips", "os"], s)
    });
    let (data, meta) = docs_page(&state, &caller, &page, ASSETS, &filter, &q).await?;
    Ok(Envelope::new(data, meta))
}

/// Détail d'un actif
///
/// L'actif et ses logiciels installés (500 entrées au plus, triées par nom ; `software_count`
/// donne le total et `meta.software_truncated` vaut `true` quand la liste est coupée).
/// 404 si l'actif est inconnu dans ce compte.
#[route(get_asset,
    params(("id" = i64, Path, description = "Identifiant de l'actif (celui de la machine)")),
    responses(
        (status = 200, description = "L'actif et ses logiciels", body = Envelope<AssetDetail>),
        (status = 404, description = "Actif inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_asset(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<AssetDetail> {
    let key = asset_key(id);
    let asset: Asset = state
        .stores
        .docs
        .get_or_404(&caller.tenant, ASSETS, &key, || {
            ApiError::not_found(format!("Actif {id}"), format!("Asset {id}"))
        })
        .await?;
    let mut software = state
        .stores
        .docs
        .get_as::<AssetSoftwareDoc>(&caller.tenant, ASSET_SOFTWARE, &key)
        .await?
        .map(|d| d.software)
        .unwrap_or_default();
    let mut meta = Meta::new();
    if software.len() > ASSET_SOFTWARE_MAX {
        software.truncate(ASSET_SOFTWARE_MAX);
        meta = meta.with("software_truncated", true);
    }
    Ok(Envelope::new(AssetDetail { asset, software }, meta))
}

/// Logiciels
///
/// Logiciels (titre et version) trouvés sur les machines du compte, avec éditeur, nombre
/// d'installations, statut de fin de vie (`eol`, `warning`, `unknown`) et nombre de CVE.
/// `q` cherche dans le nom et l'éditeur ; `has_cve=1` garde les logiciels touchés par au
/// moins une CVE ; `eol=1` garde les statuts `eol` et `warning` (jamais `unknown`). Paginé
/// par curseur (200 par défaut, 1000 au plus).
#[route(list_software,
    params(SoftwareQuery),
    responses((status = 200, description = "Une page de logiciels", body = Envelope<Vec<Software>>)))]
pub async fn list_software(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<SoftwareQuery>,
) -> ApiResult<Vec<Software>> {
    let q = SoftwareQuery { q: text(&q.q), ..q };
    // A title no asset lists any more (its last one inventoried without it) stays stored
    // with no install.
    let filter = Filter::all()
        .and(Pred::Gte("install_count", 1.0))
        .and_some(q.q.clone(), |s| {
            Pred::Contains(vec!["name", "publisher"], s)
        })
        .and_some(q.has_cve.filter(|f| *f == Flag::On), |_| {
            Pred::Gte("cve_count", 1.0)
        })
        .and_some(q.eol.filter(|f| *f == Flag::On), |_| {
            Pred::In(
                "eol_status",
                vec![json!(EolStatus::Eol), json!(EolStatus::Warning)],
            )
        });
    let (data, meta) = docs_page(&state, &caller, &page, SOFTWARE, &filter, &q).await?;
    Ok(Envelope::new(data, meta))
}

/// Vulnérabilités (CVE)
///
/// Enregistrements logiciel x CVE : description, score CVSS, probabilité EPSS, exploitation
/// connue (catalogue CISA KEV), statut (`open`, `acknowledged`, `mitigated`) et nombre
/// d'actifs concernés, triés par CVSS décroissant. `min_cvss` (0 à 10) garde les scores au
/// moins égaux ; `status` filtre le statut. Paginé par curseur (200 par défaut, 1000 au plus).
#[route(list_cves,
    params(CvesQuery),
    responses((status = 200, description = "Une page d'enregistrements CVE", body = Envelope<Vec<CveRecord>>)))]
pub async fn list_cves(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<CvesQuery>,
) -> ApiResult<Vec<CveRecord>> {
    if let Some(m) = q.min_cvss
        && !(0.0..=10.0).contains(&m)
    {
        return Err(ApiError::invalid_parameter(
            "min_cvss",
            "nombre entre 0 et 10 attendu",
            "expected a number between 0 and 10",
        ));
    }
    let filter = Filter::all()
        .and(Pred::Gte("affected_assets", 1.0))
        .and_some(q.min_cvss, |m| Pred::Gte("cvss", m))
        .and_some(q.status, |s| Pred::Eq("status", json!(s.as_str())));
    let (data, meta) = docs_page(&state, &caller, &page, CVE_RECORDS, &filter, &q).await?;
    Ok(Envelope::new(data, meta))
}
