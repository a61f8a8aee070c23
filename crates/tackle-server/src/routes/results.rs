//! Restoring offloaded tool outputs by locator.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tackle_agent::{ReadResultArgs, ReadUnit, read_page};
use tackle_protocol::ErrorCategory;
use utoipa::{IntoParams, ToSchema};

use crate::auth::User;
use crate::extract::{ValidPath, ValidQuery};
use crate::{ApiError, AppState, ErrorBody};

/// Which part of the output to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// First line (1-based, default 1) or byte offset (with `unit=bytes`, default 0).
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    pub offset: Option<u64>,
    /// Lines (default 200, at most 2000 are returned) or bytes (default 16384, at most 65536).
    #[param(minimum = 1, maximum = 65536)]
    pub limit: Option<u64>,
    /// `lines` (default) or `bytes`.
    #[param(inline)]
    pub unit: Option<Unit>,
    /// Only lines matching this regular expression (lines only).
    #[param(format = Regex)]
    pub pattern: Option<String>,
}

/// Unit of `offset` and `limit`.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Lines, counted from 1.
    Lines,
    /// Bytes, counted from 0.
    Bytes,
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
    ValidPath((id, locator)): ValidPath<(String, String)>,
    ValidQuery(q): ValidQuery<PageQuery>,
) -> Result<Json<ResultPage>, ApiError> {
    state.owned_session(&id, &user).await?;
    let unit = match q.unit {
        None | Some(Unit::Lines) => ReadUnit::Lines,
        Some(Unit::Bytes) => ReadUnit::Bytes,
    };
    if q.offset.is_some_and(|o| o > i64::MAX as u64) {
        return Err(ApiError::invalid_field("offset", "offset is beyond 2^63-1"));
    }
    if let Some(limit) = q.limit.filter(|l| !(1..=65536).contains(l)) {
        return Err(ApiError::invalid_field("limit", format!("limit is {limit}; use 1 to 65536")));
    }
    let args = ReadResultArgs {
        locator: locator.clone(),
        offset: q.offset,
        limit: q.limit,
        unit: Some(unit),
        pattern: q.pattern,
    };
    let text = read_page(state.agent().store(), &id, &args).await.map_err(|f| match f.category {
        ErrorCategory::NotFound => ApiError::not_found("stored output", &locator),
        ErrorCategory::Expired => ApiError {
            status: StatusCode::GONE,
            code: "expired",
            message: f.message,
            field: None,
            retry_after: None,
        },
        ErrorCategory::InvalidArgs => ApiError::invalid(f.message),
        _ => ApiError::internal(f.message),
    })?;
    Ok(Json(ResultPage { locator, text }))
}
