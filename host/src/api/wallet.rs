//! `GET /wallet`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::Authed;
use crate::app::App;
use crate::billing::{self, FREE_MONTHLY_CENTS, usd};
use crate::scan::PRICE_CENTS;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Wallet {
    /// `wallet`.
    pub object: String,
    /// `usd`.
    pub currency: String,
    pub deposit_balance_usd: f64,
    pub free_credit_remaining_usd: f64,
    pub free_credit_monthly_usd: f64,
    /// `YYYY-MM-DD`, the 1st of the current UTC month.
    pub free_credit_period_start: String,
    /// Deposit plus free credit: the spec's formula, reflecting everything charged so far
    /// (reservations are not charges; see `scans_remaining_estimate`).
    pub total_available_usd: f64,
    /// Set aside for scans that may still be charged: queued, processing, and complete but
    /// not yet fetched (additive field).
    pub reserved_usd: f64,
    pub price_per_scan_usd: BTreeMap<String, f64>,
    /// Scans a create would accept now: `total_available_usd` net of `reserved_usd`, over the
    /// price, rounded down, so it reads 0 exactly when `POST /scans` answers 402. (The spec's
    /// estimate is `total_available_usd` over the price; it carries the reservation here, as
    /// the README's spec notes say.)
    pub scans_remaining_estimate: i64,
}

/// Check the wallet. Read-only; never debits.
#[utoipa::path(
    get, path = "/api/v1/wallet", tag = "wallet",
    responses(
        (status = 200, body = Wallet),
        (status = 401, body = ErrorBody),
        (status = 405, description = "Any method other than GET", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn get_wallet(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
) -> Result<Json<Wallet>, ApiError> {
    let now = app.clock.now();
    let period = billing::period_of(now);
    let (w, reserved) = app.db.wallet_and_reserved(&caller.org_id).await?;
    let free = w.free_remaining(&period);
    let total = w.available(&period);
    let spendable = (total - reserved).max(0);
    Ok(Json(Wallet {
        object: "wallet".into(),
        currency: "usd".into(),
        deposit_balance_usd: usd(w.deposit_cents),
        free_credit_remaining_usd: usd(free),
        free_credit_monthly_usd: usd(FREE_MONTHLY_CENTS),
        free_credit_period_start: billing::period_start(now),
        total_available_usd: usd(total),
        reserved_usd: usd(reserved),
        price_per_scan_usd: BTreeMap::from([(crate::scan::MODEL.to_owned(), usd(PRICE_CENTS))]),
        scans_remaining_estimate: spendable / PRICE_CENTS,
    }))
}
