/** Link lists are sets kept in insertion order. */
export function addToList(list: string[], id: string): void {
  if (!list.includes(id)) list.push(id)
}

export function removeFromList(list: string[], id: string): void {
  const index = list.indexOf(id)
  if (index !== -1) list.splice(index, 1)
}
