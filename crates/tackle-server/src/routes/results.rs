//! Restoring offloaded tool outputs by locator.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tackle_agent::{ReadResultArgs, ReadUnit, read_page};
use tackle_protocol::ErrorCategory;
use utoipa::{IntoParams, ToSchema};

use crate::auth::User;
use crate::{ApiError, AppState, ErrorBody};

/// Which part of the output to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// First line (1-based, default 1) or byte offset (with `unit=bytes`, default 0).
    pub offset: Option<u64>,
    /// Lines (default 200) or bytes (default 16384) to read.
    pub limit: Option<u64>,
    /// `lines` (default) or `bytes`.
    pub unit: Option<String>,
    /// Only lines matching this regular expression (lines only).
    pub pattern: Option<String>,
}

/// A page of a stored output.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultPage {
    /// The locator.
    pub locator: String,
    /// The page, headed by a line saying which part it is and how to read on.
    pub text: String,
}

/// Reads a tool output offloaded to the store (the `locator` of a `tool_result` event), by pages.
#[utoipa::path(get, path = "/v1/sessions/{id}/results/{locator}", tag = "results",
    params(("id" = String, Path, description = "Session id"), ("locator" = String, Path, description = "Locator from a tool_result event"), PageQuery),
    responses((status = 200, body = ResultPage), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 410, description = "The output expired (its TTL passed)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn read(
    State(state): State<AppState>,
    User(user): User,
    Path((id, locator)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ResultPage>, ApiError> {
    state.owned_session(&id, &user).await?;
    let unit = match q.unit.as_deref() {
        None | Some("lines") => ReadUnit::Lines,
        Some("bytes") => ReadUnit::Bytes,
        Some(other) => {
            return Err(ApiError::invalid_field(
                "unit",
                format!("unit {other:?} is not known; use lines or bytes"),
            ));
        }
    };
    let args = ReadResultArgs {
        locator: locator.clone(),
        offset: q.offset,
        limit: q.limit,
        unit: Some(unit),
        pattern: q.pattern,
    };
    let text = read_page(state.agent().store(), &id, &args).await.map_err(|f| match f.category {
        ErrorCategory::NotFound => ApiError::not_found("stored output", &locator),
        ErrorCategory::Expired => {
            ApiError { status: StatusCode::GONE, code: "expired", message: f.message, field: None }
        }
        ErrorCategory::InvalidArgs => ApiError::invalid(f.message),
        _ => ApiError::internal(f.message),
    })?;
    Ok(Json(ResultPage { locator, text }))
}
