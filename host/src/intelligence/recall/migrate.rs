//! Re-embedding the recall store when recall's model changes. Every vector is stored with its
//! model's id and a query is compared only with vectors of its own model, so after the change
//! from all-MiniLM-L6-v2 (English) to multilingual-e5-small an organisation's older texts would
//! no longer be found. Each process that runs workers re-embeds them in the background at
//! start, in batches, oldest first: both the remembered texts and those of scans not yet
//! fetched. Every update names the model it replaces, so two processes doing this at once
//! never overwrite each other's work, and a stop halfway loses nothing (the rest is done at
//! the next start). Until a row is re-embedded it is simply not among the hits.

use tokio_util::sync::CancellationToken;

use super::{Recall, RecallError};
use crate::store::Db;
use crate::store::recall::StaleText;

/// Texts embedded per round trip: one forward pass of the model's batch size, several times.
const BATCH: i64 = 64;

/// Re-embeds every stored text whose vector is of another model than `recall`'s, until none is
/// left or `cancel` fires. Returns how many rows were replaced.
///
/// # Errors
/// The model cannot be loaded, embedding fails, or the store fails.
pub async fn reembed_other_models(
    db: &Db,
    recall: &Recall,
    cancel: &CancellationToken,
) -> Result<u64, RecallError> {
    // The model is loaded only when there is something to re-embed.
    let model = crate::embed::e5::MODEL_ID;
    let mut replaced = 0;
    while !cancel.is_cancelled() {
        let stale = db.texts_of_other_models(model, BATCH).await?;
        if stale.is_empty() {
            break;
        }
        let (id, vectors) = recall
            .embed(stale.iter().map(|t| t.text.clone()).collect())
            .await?;
        // Rows tagged with any other id would be read again at the next round, for ever.
        if id != model {
            return Err(RecallError::Model(format!(
                "recall's embedder is {id}, not {model}"
            )));
        }
        let updates: Vec<(&StaleText, &[f32])> = stale
            .iter()
            .zip(&vectors)
            .map(|(t, v)| (t, v.as_slice()))
            .collect();
        replaced += db.replace_vectors(&id, &updates).await?;
    }
    Ok(replaced)
}
