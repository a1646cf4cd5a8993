import { TrashIcon } from './Icons';

/** The first step of a delete: the bin, named for screen readers as what would go. */
export function DeleteButton({ what, onClick }: { what: string; onClick: () => void }) {
  return (
    <button type="button" class="icon-button" aria-label={`Delete ${what}`} title="Delete" onClick={onClick}>
      <TrashIcon />
    </button>
  );
}

/** The second step of a delete: Delete (named for screen readers as what goes) or Keep. */
export function ConfirmDelete({ what, onDelete, onKeep }: { what: string; onDelete: () => void; onKeep: () => void }) {
  return (
    <>
      <button type="button" class="button-danger small" aria-label={`Really delete ${what}`} onClick={onDelete}>
        Delete
      </button>
      <button type="button" class="button-quiet small" onClick={onKeep}>
        Keep
      </button>
    </>
  );
}
