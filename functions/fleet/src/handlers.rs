//! Fleet handlers: thin, over the document primitives.

use axum::extract::State;
use netops_shared::lookup::Lookup;
use netops_shared::paging::docs_page;
use netops_shared::route;
use netops_shared::store::{Filter, Pred};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Page, Path, Query, ok};
use serde_json::json;

use crate::model::{Identity, MACHINES, Machine, MachinesQuery};

fn machine(body: serde_json::Value) -> Result<Machine, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::internal(&e))
}

/// Identité du jeton
///
/// Renvoie le nom du jeton appelant, ses portées, sa date d'expiration et le compte client
/// (tenant) auquel il appartient. Aucune portée n'est requise : un jeton valide suffit.
#[route(get_me,
    responses((status = 200, description = "Identité du jeton", body = Envelope<Identity>)))]
pub async fn get_me(caller: Caller) -> ApiResult<Identity> {
    ok(Identity {
        name: caller.token_name,
        scopes: caller
            .scopes
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect(),
        expires_at: caller.expires_at,
        tenant: caller.tenant,
    })
}

/// Liste des machines
///
/// Machines équipées de l'agent, triées par nom d'hôte, paginées par curseur (100 par
/// défaut, 500 au plus). Le filtre `status` compare l'état de l'agent à l'identique.
#[route(list_machines,
    params(MachinesQuery),
    responses((status = 200, description = "Une page de machines", body = Envelope<Vec<Machine>>)))]
pub async fn list_machines(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<MachinesQuery>,
) -> ApiResult<Vec<Machine>> {
    let filter = Filter::all().and_some(q.status.clone(), |s| Pred::Eq("status", json!(s)));
    let (data, meta) = docs_page(&state, &caller, &page, MACHINES, &filter, &q).await?;
    Ok(Envelope::new(data, meta))
}

/// Détail d'une machine
///
/// La machine dont le nom d'hôte est exactement `hostname` dans le compte du jeton ;
/// 404 si elle est inconnue.
#[route(get_machine,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit", example = "PAR-LT-0001")),
    responses(
        (status = 200, description = "La machine", body = Envelope<Machine>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_machine(
    State(state): State<AppState>,
    caller: Caller,
    Path(hostname): Path<String>,
) -> ApiResult<Machine> {
    let doc = state.stores.docs.machine(&caller.tenant, &hostname).await?;
    ok(machine(doc)?)
}
